"""The package's version is the project's."""

import os
import re

import ddprun

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_the_version_is_the_projects():
    with open(os.path.join(ROOT, "CMakeLists.txt")) as f:
        project = re.search(r"project\(ddprun VERSION ([0-9.]+)", f.read())
    assert project is not None and ddprun.__version__ == project.group(1)

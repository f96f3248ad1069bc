import os, sys, time
deadline = (int(time.time()) + 2) // 2 * 2 + 2
time.sleep(max(0.0, deadline - time.time()))
sys.exit(3 + int(os.environ["RANK"]))

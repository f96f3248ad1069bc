// param_diff A B TOLERANCE: compares two --dump-params files (raw float32); prints the largest
// absolute difference and exits 0 when it is within TOLERANCE, 1 otherwise, 2 on bad input.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <vector>

static bool readFloats(const char* path, std::vector<float>& out) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (bytes.size() % sizeof(float) != 0) return false;
  out.resize(bytes.size() / sizeof(float));
  std::copy(bytes.begin(), bytes.end(), reinterpret_cast<char*>(out.data()));
  return true;
}

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: param_diff A B TOLERANCE\n");
    return 2;
  }
  std::vector<float> a, b;
  if (!readFloats(argv[1], a) || !readFloats(argv[2], b)) {
    std::fprintf(stderr, "param_diff: cannot read %s or %s as float32\n", argv[1], argv[2]);
    return 2;
  }
  if (a.size() != b.size() || a.empty()) {
    std::fprintf(stderr, "param_diff: %zu vs %zu parameters\n", a.size(), b.size());
    return 1;
  }
  const double tolerance = std::atof(argv[3]);
  double worst = 0;
  size_t differing = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    double d = std::fabs(static_cast<double>(a[i]) - b[i]);
    if (!(d <= worst)) worst = d;  // NaN counts as worst
    if (a[i] != b[i]) ++differing;
  }
  std::printf("param_diff: %zu parameters, %zu differ, max abs diff %.3g (tolerance %g)\n", a.size(), differing, worst,
              tolerance);
  return worst <= tolerance ? 0 : 1;
}

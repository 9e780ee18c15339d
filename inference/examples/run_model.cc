// Runs a saved model (oar.jit.save) with the C++ predictor, no Python in the process.
//
//   oar_run_model <prefix> <input.bin> <d0,d1,...> <output.bin> [--threads N] [--repeat N]
//                 [--device TYPE:ID] [--cinn]
//
// input.bin holds the float32 input of the given shape (raw, little-endian); the first
// output is written to output.bin as raw float32 and its shape printed. With --repeat N
// the run is timed N times and the median latency printed. --device runs it on a plugin
// device (Config::EnableCustomDevice; the plugin is found through CUSTOM_DEVICE_ROOT).
// --cinn runs the model through the fusion compiler (Config::EnableCinn).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "inference/predictor/predictor.h"

namespace {
std::vector<int64_t> parse_dims(const std::string& s) {
  std::vector<int64_t> dims;
  std::stringstream ss(s);
  std::string part;
  while (std::getline(ss, part, ',')) dims.push_back(std::stoll(part));
  return dims;
}
}  // namespace

int main(int argc, char** argv) {
  if (argc < 5) {
    std::cerr
        << "usage: " << argv[0]
        << " <prefix> <input.bin> <d0,d1,...> <output.bin> [--threads N] [--repeat N] [--device TYPE:ID] [--cinn]\n";
    return 2;
  }
  int threads = 1, repeat = 0;
  bool cinn = false;
  std::string device;
  for (int i = 5; i < argc; ++i) {
    if (std::strcmp(argv[i], "--cinn") == 0) {
      cinn = true;
      continue;
    }
    if (i + 1 >= argc) break;
    if (std::strcmp(argv[i], "--threads") == 0) threads = std::stoi(argv[i + 1]);
    if (std::strcmp(argv[i], "--repeat") == 0) repeat = std::stoi(argv[i + 1]);
    if (std::strcmp(argv[i], "--device") == 0) device = argv[i + 1];
    ++i;
  }
  try {
    const std::string prefix = argv[1];
    oar::inference::Config config(prefix + ".pdmodel", prefix + ".pdiparams");
    config.SetCpuMathLibraryNumThreads(threads);
    if (cinn) config.EnableCinn();
    if (!device.empty()) {
      const size_t colon = device.find(':');
      config.EnableCustomDevice(device.substr(0, colon),
                                colon == std::string::npos ? 0 : std::stoi(device.substr(colon + 1)));
    }
    auto predictor = oar::inference::CreatePredictor(config);

    const std::vector<int64_t> dims = parse_dims(argv[3]);
    int64_t n = 1;
    for (int64_t d : dims) n *= d;
    std::vector<float> input(static_cast<size_t>(n));
    std::ifstream in(argv[2], std::ios::binary);
    in.read(reinterpret_cast<char*>(input.data()), static_cast<std::streamsize>(n * sizeof(float)));
    if (!in) {
      std::cerr << "error: " << argv[2] << " holds fewer than " << n << " float32 values\n";
      return 1;
    }
    auto x = predictor->GetInputHandle(predictor->GetInputNames()[0]);
    x->Reshape(dims);
    x->CopyFromCpu(input.data());
    predictor->Run();

    auto y = predictor->GetOutputHandle(predictor->GetOutputNames()[0]);
    std::vector<float> out(static_cast<size_t>(y->numel()));
    y->CopyToCpu(out.data());
    std::ofstream o(argv[4], std::ios::binary);
    o.write(reinterpret_cast<const char*>(out.data()), static_cast<std::streamsize>(out.size() * sizeof(float)));
    std::cout << "output " << predictor->GetOutputNames()[0] << " shape";
    for (int64_t d : y->shape()) std::cout << " " << d;
    std::cout << "\n";

    if (repeat > 0) {
      std::vector<double> ms;
      for (int i = 0; i < repeat; ++i) {
        auto t0 = std::chrono::steady_clock::now();
        predictor->Run();
        ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
      }
      std::sort(ms.begin(), ms.end());
      std::cout << "median_ms " << ms[ms.size() / 2] << "\n";
    }
  } catch (const std::exception& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 1;
  }
  return 0;
}

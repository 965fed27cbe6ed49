import os

# Run every test with CPU fallback disabled: an op without a {{ device_type }}
# kernel must fail, not silently run on the CPU.
os.environ.setdefault("FLAGS_enable_api_kernel_fallback", "0")
os.environ.setdefault("GLOG_minloglevel", "2")

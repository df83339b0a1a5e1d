#!/usr/bin/env bash
# Runs inside the bullseye builder root (build_wheel.sh chroots into it, once
# per version of this file and its inputs).
# /opt/cuda: the CUDA 12.4 compiler (wheels/README.md says why 12.4): NVIDIA's
# nvcc, cicc, ptxas ... as Debian trixie packages them (non-free), and the
# runtime headers, libcudart.so.12 and CCCL's headers (cuda_fp16.h and
# cuda_bf16.h include its <nv/target>) from NVIDIA's PyPI wheels of the same
# release, laid out as a toolkit.
set -euo pipefail
rm -rf /opt/cuda /tmp/cuda-deb /tmp/cuda-pypi && mkdir -p /opt/cuda/bin/crt /opt/cuda/nvvm/bin \
  /opt/cuda/nvvm/libdevice /opt/cuda/include /opt/cuda/lib64 /tmp/cuda-pypi
dpkg-deb -x /opt/src/cuda-toolkit.deb /tmp/cuda-deb
tk=/tmp/cuda-deb/usr/lib/nvidia-cuda-toolkit
cp "$tk/bin/nvcc" "$tk/bin/crt/"*.stub /opt/cuda/bin/
mv /opt/cuda/bin/*.stub /opt/cuda/bin/crt/
cp "$tk/bin/cicc" /opt/cuda/nvvm/bin/
cp "$tk/libdevice/libdevice.10.bc" /opt/cuda/nvvm/libdevice/
for tool in cudafe++ fatbinary nvlink ptxas bin2c cuobjdump nvprune; do
  cp "/tmp/cuda-deb/usr/bin/$tool" /opt/cuda/bin/
done
/opt/venv/bin/pip download -q --disable-pip-version-check --no-deps -d /tmp/cuda-pypi \
  nvidia-cuda-nvcc-cu12==12.4.131 nvidia-cuda-runtime-cu12==12.4.127 \
  nvidia-cuda-cccl-cu12==12.4.127.post1
for whl in /tmp/cuda-pypi/*.whl; do
  /opt/venv/bin/python -c 'import sys, zipfile; zipfile.ZipFile(sys.argv[1]).extractall(sys.argv[2])' \
    "$whl" /tmp/cuda-pypi/x
done
cp -r /tmp/cuda-pypi/x/nvidia/cuda_runtime/include/. /tmp/cuda-pypi/x/nvidia/cuda_nvcc/include/. \
  /tmp/cuda-pypi/x/nvidia/cuda_cccl/include/. /opt/cuda/include/
cp /tmp/cuda-pypi/x/nvidia/cuda_runtime/lib/libcudart.so.12 /opt/cuda/lib64/
ln -s libcudart.so.12 /opt/cuda/lib64/libcudart.so
# nvcc names libcudadevrt in every link; saywho launches nothing from the
# device, so an empty archive stands in for the one PyPI's 12.4 lacks
ar rc /opt/cuda/lib64/libcudadevrt.a
cat >/opt/cuda/bin/nvcc.profile <<'PROFILE'
TOP              = $(_HERE_)/..
NVVMIR_LIBRARY_DIR = $(TOP)/nvvm/libdevice
LD_LIBRARY_PATH += $(TOP)/lib64:
PATH            += $(TOP)/nvvm/bin:$(_HERE_):
INCLUDES        +=  "-I$(TOP)/include" $(_SPACE_)
LIBRARIES        =+ $(_SPACE_) "-L$(TOP)/lib64"
CUDAFE_FLAGS    +=
PTXAS_FLAGS     +=
PROFILE
rm -rf /tmp/cuda-deb /tmp/cuda-pypi
/opt/cuda/bin/nvcc --version | tail -2

# saywho serve in a container: the wheel built from this checkout in a
# builder stage, installed with its [server,hub] extras in a smaller stage.
#
#   docker build -t saywho .
#   docker run -p 8000:8000 -v saywho-data:/data -v hf:/root/.cache/huggingface saywho --model base
#
# With a GPU: the CUDA compilers in the builder (the CUDA backend is built
# when nvcc is found) and NVIDIA's runtime image to run on:
#
#   docker build -t saywho:cuda \
#     --build-arg BUILD_BASE=nvidia/cuda:12.4.1-devel-ubuntu22.04 \
#     --build-arg RUN_BASE=nvidia/cuda:12.4.1-runtime-ubuntu22.04 .
#   docker run --gpus all -p 8000:8000 saywho:cuda --model large-v3 --device cuda
#
# tests/test_dockerfile.py builds the wheel step here, where Docker may not be.
ARG BUILD_BASE=debian:bookworm-slim
ARG RUN_BASE=debian:bookworm-slim

FROM ${BUILD_BASE} AS wheel
RUN apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      build-essential cmake ninja-build pkg-config python3-dev python3-venv \
      libavformat-dev libavcodec-dev libswresample-dev libavutil-dev libopenblas-dev \
    && rm -rf /var/lib/apt/lists/*
RUN python3 -m venv /opt/build
WORKDIR /src
COPY . .
# the wheel step (tests/test_dockerfile.py runs this line)
RUN /opt/build/bin/pip wheel --no-deps --wheel-dir /wheels .

FROM ${RUN_BASE}
# FFmpeg's libraries and OpenBLAS, as the wheel built above links them
RUN apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      python3 python3-venv ffmpeg libopenblas0 ca-certificates \
    && rm -rf /var/lib/apt/lists/*
COPY --from=wheel /wheels /wheels
RUN python3 -m venv /opt/saywho \
    && /opt/saywho/bin/pip install --no-cache-dir "$(ls /wheels/saywho-*.whl)[server,hub]" \
    && rm -rf /wheels
ENV PATH=/opt/saywho/bin:$PATH
VOLUME /data
EXPOSE 8000
# 0.0.0.0 inside the container: the port reaches it only as docker run -p maps it
ENTRYPOINT ["saywho", "serve", "--host", "0.0.0.0", "--port", "8000", "--data-dir", "/data"]
CMD ["--model", "base"]

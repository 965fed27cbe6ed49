# devkit verify image for one target architecture (run under qemu when foreign):
# a Python to create fresh environments in (python3-venv: each venv gets pip from ensurepip,
# so no system pip is installed and byte-compiled under qemu), and the libraries Paddle needs.
ARG BASE=debian:bookworm
FROM ${BASE}
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      ca-certificates python3 python3-venv libgomp1 \
 && rm -rf /var/lib/apt/lists/*
ENV HOME=/tmp PIP_DISABLE_PIP_VERSION_CHECK=1 PYTHONDONTWRITEBYTECODE=1

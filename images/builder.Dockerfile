# devkit builder: compiles plugins natively for x86_64 and cross-compiles for
# aarch64 and armhf with Debian's cross g++. BASE is debian:<suite> where a
# registry is reachable, or the image `devkit images bootstrap --suite` makes
# offline; the suite (bullseye by default) sets the glibc the plugin links against.
ARG BASE=debian:bullseye
FROM ${BASE}
# The cross compilers of every target (recipes/*.toml: cross_compiler), given by devkit.
ARG CROSS_COMPILERS
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      g++ make ccache file ca-certificates python3 python3-venv python3-pip \
      ${CROSS_COMPILERS} \
 && rm -rf /var/lib/apt/lists/*
# CMake and Ninja come from PyPI into the build environment (newer than Debian's).
ENV HOME=/tmp PIP_DISABLE_PIP_VERSION_CHECK=1 PYTHONDONTWRITEBYTECODE=1

# devkit verify image for a target without a framework runtime (armhf): the device library's
# test binaries run on the bare base system, under qemu when foreign.
ARG BASE=debian:bookworm
FROM ${BASE}
ENV HOME=/tmp

# The lab's llama.cpp server image: stands in for ggml-org's ghcr.io/ggml-org/llama.cpp:server-cuda,
# which no registry here serves. llama.cpp's own C++ `llama-server`, built from the llama.cpp tree
# that llama-cpp-python's PyPI sdist vendors (vendor/llama.cpp, tools/server included): no Debian
# package and no reachable registry carries it. Built by prepare.sh (step `llamaimage`; legacy
# builder). Build arguments:
#   BASE    the bookworm minbase root file system imported from debootstrap (see prepare.sh)
#   SDIST   the sdist's file name in the context (prepare.sh downloads it into its cache)
#   COMMIT  the vendored tree's llama.cpp commit (the sdist has no git history for it to read):
#           what `llama-server --version` reports, and so the engine probe's messages
ARG BASE

FROM ${BASE} AS build
ARG SDIST
ARG COMMIT
ENV DEBIAN_FRONTEND=noninteractive
RUN apt-get update \
 && apt-get install -y --no-install-recommends build-essential cmake \
 && rm -rf /var/lib/apt/lists/*
COPY ${SDIST} /tmp/sdist.tar.gz
# Only the vendored tree; the Python package around it is not built.
RUN mkdir /src && tar -xzf /tmp/sdist.tar.gz -C /src --strip-components=3 --wildcards '*/vendor/llama.cpp/*' \
 && rm /tmp/sdist.tar.gz
# Portable x86-64 (no -march=native: the image runs on other machines than the builder);
# static libraries so the runtime stage takes one binary; no curl/openssl (models come from the
# node's cache, never a download); no web UI (neither npm nor the prebuilt assets' download).
# -O1 and ggml's own matrix kernels instead of llamafile's (GGML_LLAMAFILE=OFF): the lab serves a
# tiny model, and this compile is the longest step of a cold main job on 2 cores.
RUN cmake -S /src -B /build -DCMAKE_BUILD_TYPE=Release -DCMAKE_C_FLAGS_RELEASE="-O1 -DNDEBUG" \
      -DCMAKE_CXX_FLAGS_RELEASE="-O1 -DNDEBUG" -DGGML_LLAMAFILE=OFF -DGGML_NATIVE=OFF -DLLAMA_CURL=OFF \
      -DLLAMA_OPENSSL=OFF -DBUILD_SHARED_LIBS=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF \
      -DLLAMA_BUILD_UI=OFF -DLLAMA_USE_PREBUILT_UI=OFF -DLLAMA_BUILD_COMMIT=${COMMIT} \
 && cmake --build /build --target llama-server -j2 \
 && strip /build/bin/llama-server

FROM ${BASE}
ENV DEBIAN_FRONTEND=noninteractive LANG=C.UTF-8
# libgomp1: ggml's CPU backend threads with OpenMP; curl for health checks; python3 (standard
# library only) for the product's engine probe, which runs in the image (components/engines/llamacpp.py).
RUN apt-get update \
 && apt-get install -y --no-install-recommends libgomp1 ca-certificates curl python3 \
 && rm -rf /var/lib/apt/lists/* /var/cache/apt/*.bin
COPY --from=build /build/bin/llama-server /usr/local/bin/llama-server
RUN llama-server --version
# No ENTRYPOINT (like the vendor image the product runs with one): units say `llama-server ...`.
CMD ["llama-server", "--help"]

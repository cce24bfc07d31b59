# Derived engine image: the base engine plus a transformers upgrade layer and pinned pip packages.
# Rendered by blackwell-serving; its content address is the image tag.
FROM hellohal2064/vllm-qwen3.5-gb10:latest
LABEL org.blackwell-serving.base=hellohal2064/vllm-qwen3.5-gb10:latest

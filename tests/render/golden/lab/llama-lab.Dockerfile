# Derived engine image: the base engine plus a transformers upgrade layer and pinned pip packages.
# Rendered by blackwell-serving; its content address is the image tag.
FROM 198.18.0.1:5000/lab/llama-cpp:0c1e570
LABEL org.blackwell-serving.base=198.18.0.1:5000/lab/llama-cpp:0c1e570

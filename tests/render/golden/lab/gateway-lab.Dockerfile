# Derived engine image: the base engine plus a transformers upgrade layer and pinned pip packages.
# Rendered by blackwell-serving; its content address is the image tag.
FROM 198.18.0.1:5000/lab/vllm-cpu:0.32.0
# CA bundle of the build network's TLS proxy, for pip only.
COPY pip-ca.crt /etc/blackwell-pip-ca.crt
ENV PIP_CERT=/etc/blackwell-pip-ca.crt
RUN python3 -m pip install --no-cache-dir --upgrade 'litellm[proxy]==1.106.12' prisma==0.15.0 prometheus-client==0.23.1 \
 && python3 -c "import transformers; print('transformers', transformers.__version__)"
LABEL org.blackwell-serving.base=198.18.0.1:5000/lab/vllm-cpu:0.32.0

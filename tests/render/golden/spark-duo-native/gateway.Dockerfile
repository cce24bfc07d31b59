# Derived engine image: the base engine plus a transformers upgrade layer and pinned pip packages.
# Rendered by blackwell-serving; its content address is the image tag.
FROM python:3.12-slim
RUN python3 -m pip install --no-cache-dir --upgrade 'litellm[proxy]==1.106.12' prisma==0.15.0 \
 && python3 -c "import transformers; print('transformers', transformers.__version__)"
LABEL org.blackwell-serving.base=python:3.12-slim

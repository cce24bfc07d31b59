# Derived engine image: the base engine plus a transformers upgrade layer and pinned pip packages.
# Rendered by blackwell-serving; its content address is the image tag.
FROM lmsysorg/sglang:dev-cu13
RUN python3 -m pip install --no-cache-dir --upgrade 'transformers>=5.2' \
 && python3 -c "import transformers; print('transformers', transformers.__version__)"
LABEL org.blackwell-serving.base=lmsysorg/sglang:dev-cu13

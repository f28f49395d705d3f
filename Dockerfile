# ShardScope dashboard in a container.
#   docker build -t shardscope .
#   docker run --rm -p 127.0.0.1:8501:8501 -v "$PWD/workspace:/app/workspace" shardscope
# Inside the container Streamlit must listen on 0.0.0.0 so the published port reaches it; publish it
# on the host's loopback only (as above). Usage statistics stay off (.streamlit/config.toml).
FROM python:3.11-slim

ENV PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    SHARDSCOPE_WORKSPACE=/app/workspace

WORKDIR /app
COPY requirements.txt .
RUN python -m venv /app/.venv && /app/.venv/bin/pip install -r requirements.txt
ENV PATH="/app/.venv/bin:$PATH"

COPY . .
EXPOSE 8501
HEALTHCHECK CMD python -c "import urllib.request; urllib.request.urlopen('http://127.0.0.1:8501/_stcore/health')"
CMD ["streamlit", "run", "app/main.py", "--server.address=0.0.0.0", "--server.port=8501"]

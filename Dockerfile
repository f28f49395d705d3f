# ShardScope dashboard in a container.
#   docker build -t shardscope .
#   docker run --rm -p 127.0.0.1:8501:8501 -v "$PWD/workspace:/app/workspace" shardscope
# Inside the container Streamlit must listen on 0.0.0.0 so the published port reaches it; publish it
# on the host's loopback only (as above), and keep the port number: the server answers only to Host
# 127.0.0.1 / localhost / [::1] on its own port (app/shardscope_server.py). Usage statistics stay off
# (.streamlit/config.toml). The server runs as the unprivileged user `shardscope` (uid 10001), which
# owns only the workspace: a bind-mounted workspace must be writable by uid 10001, or run the image
# as yourself with `--user "$(id -u):$(id -g)" -e HOME=/tmp`.
FROM python:3.11-slim

ENV PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    SHARDSCOPE_WORKSPACE=/app/workspace

RUN useradd --create-home --uid 10001 --user-group --shell /usr/sbin/nologin shardscope

WORKDIR /app
COPY requirements.txt .
RUN python -m venv /app/.venv && /app/.venv/bin/pip install -r requirements.txt
ENV PATH="/app/.venv/bin:$PATH"

COPY . .
# The log reader's compiled passes (core/logs/linescan.py) are compiled here, once, into a cache the
# server user owns: no container start spends seconds compiling them.
ENV NUMBA_CACHE_DIR=/app/.numba-cache
RUN python -c "from core.logs.linescan import warm_up; warm_up()" \
    && mkdir -p /app/workspace && chown -R shardscope:shardscope /app/workspace /app/.numba-cache
USER shardscope
ENV HOME=/home/shardscope
EXPOSE 8501
HEALTHCHECK CMD python -c "import urllib.request; urllib.request.urlopen('http://127.0.0.1:8501/_stcore/health')"
CMD ["streamlit", "run", "app/shardscope_server.py", "--server.address=0.0.0.0", "--server.port=8501"]

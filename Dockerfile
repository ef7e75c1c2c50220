# The drift controller image: `intentc daemon` as a non-root user, git for
# following the intents repository, the wheel and nothing of the build.
#   docker build -t intentc:0.1.0 .
# examples/deploy/05-deployment.yaml runs it (uid 65532, read-only root).

FROM python:3.11-slim AS build
WORKDIR /src
# gcc and libyaml's headers build the compiled YAML reader (setup.py)
RUN apt-get update \
    && apt-get install -y --no-install-recommends gcc libc6-dev libyaml-dev \
    && rm -rf /var/lib/apt/lists/*
ENV INTENTC_REQUIRE_SPEEDUPS=1
COPY pyproject.toml setup.py README.md ./
COPY intentc ./intentc
COPY grammar ./grammar
COPY schemas ./schemas
RUN pip wheel --no-cache-dir --wheel-dir /wheels .

FROM python:3.11-slim
RUN apt-get update \
    && apt-get install -y --no-install-recommends git ca-certificates openssh-client libyaml-0-2 \
    && rm -rf /var/lib/apt/lists/* \
    && groupadd --gid 65532 intentc \
    && useradd --uid 65532 --gid 65532 --home-dir /var/lib/intentc --create-home --shell /usr/sbin/nologin intentc
COPY --from=build /wheels /wheels
RUN pip install --no-cache-dir /wheels/*.whl && rm -rf /wheels
ENV HOME=/var/lib/intentc XDG_CACHE_HOME=/var/lib/intentc/cache PYTHONUNBUFFERED=1
WORKDIR /var/lib/intentc
USER 65532:65532
EXPOSE 9090
ENTRYPOINT ["intentc", "daemon"]
CMD ["--help"]

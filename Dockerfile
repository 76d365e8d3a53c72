# One production image for both the web process (gunicorn) and the Celery worker.
# Postgres and Redis come from docker-compose.yml; nothing embedded starts in here.
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    DJANGO_SETTINGS_MODULE=trustrag_site.settings \
    STATIC_ROOT=/app/staticfiles \
    MEDIA_ROOT=/data/media

WORKDIR /app

# OCR of scanned PDF pages: Tesseract with its English data, and poppler's pdftoppm to draw the pages.
RUN apt-get update && apt-get install -y --no-install-recommends tesseract-ocr tesseract-ocr-eng poppler-utils \
    && rm -rf /var/lib/apt/lists/*

# torch first and alone, from the CPU index: the default index would pull the
# CUDA build (gigabytes of GPU libraries the app never uses). The pin matches
# requirements.txt, so the next step finds it already satisfied.
RUN pip install --index-url https://download.pytorch.org/whl/cpu torch==2.13.0

COPY requirements.txt .
RUN pip install -r requirements.txt

COPY . .

# Placeholders only for this build step (not ENV, so they never reach a running
# container): with DATABASE_URL and REDIS_URL set the settings start no embedded
# services, and collectstatic never connects to either.
RUN SECRET_KEY=collectstatic-build-placeholder \
    DATABASE_URL=postgresql://build:build@127.0.0.1:5432/build \
    REDIS_URL=redis://127.0.0.1:6379/0 \
    python manage.py collectstatic --noinput

# The uploads volume is mounted at /data/media; an empty named volume takes the
# ownership of this directory, so the non-root user can write to it.
RUN useradd --create-home --uid 1000 --shell /usr/sbin/nologin trustrag \
    && mkdir -p /data/media \
    && chown -R trustrag:trustrag /data
USER trustrag

EXPOSE 8000
CMD ["gunicorn", "trustrag_site.wsgi", "--config", "python:trustrag_site.gunicorn_conf", "--bind", "0.0.0.0:8000"]

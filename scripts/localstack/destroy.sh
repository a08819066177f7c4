#!/usr/bin/env bash
# Removes the stack that scripts/localstack/deploy.sh put into LocalStack (`docker compose down -v`
# drops LocalStack's state altogether).
set -euo pipefail
cd "$(dirname "$0")/../.."
export PATH="$PWD/node_modules/.bin:$PATH"
STACK="${CRAWLER_STACK:-ServerlessCrawler}"
export AWS_DEFAULT_REGION="${AWS_DEFAULT_REGION:-us-east-1}"
export AWS_REGION="$AWS_DEFAULT_REGION"
if [ -n "${LOCALSTACK_ENDPOINT:-}" ]; then
  export AWS_ENDPOINT_URL="$LOCALSTACK_ENDPOINT" AWS_ENDPOINT_URL_S3="$LOCALSTACK_ENDPOINT"
fi
cdklocal destroy "$STACK" --force

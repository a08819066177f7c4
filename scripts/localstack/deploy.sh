#!/usr/bin/env bash
# Deploys the real stack (cdk/) into a running LocalStack: `cdklocal bootstrap` + `cdklocal deploy`.
#
#   docker compose up -d                 # LocalStack, with LOCALSTACK_AUTH_TOKEN from the environment
#   scripts/localstack/deploy.sh         # this
#   npm run test:localstack              # the end-to-end suite against the deployed stack
#
# Environment: LOCALSTACK_ENDPOINT (default http://localhost:4566), CRAWLER_STACK (default
# ServerlessCrawler), AWS_DEFAULT_REGION (default us-east-1). cdklocal (npm package aws-cdk-local, a
# devDependency) runs the project's own `cdk` with every AWS endpoint pointed at LocalStack.
set -euo pipefail
cd "$(dirname "$0")/../.."

# The project's Node 24 (the CDK app is TypeScript run by Node's type stripping) and its cdklocal.
export PATH="$PWD/node_modules/.bin:$PATH"
if ! command -v cdklocal >/dev/null; then
  echo "cdklocal not found: run \`npm install\` first (devDependency aws-cdk-local)" >&2
  exit 1
fi

ENDPOINT="${LOCALSTACK_ENDPOINT:-http://localhost:4566}"
STACK="${CRAWLER_STACK:-ServerlessCrawler}"
export AWS_DEFAULT_REGION="${AWS_DEFAULT_REGION:-us-east-1}"
export AWS_REGION="$AWS_DEFAULT_REGION"

if ! node -e 'fetch(process.argv[1] + "/_localstack/health", { signal: AbortSignal.timeout(3000) }).then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))' "$ENDPOINT"; then
  echo "LocalStack does not answer at $ENDPOINT: start it with \`docker compose up -d\` (needs LOCALSTACK_AUTH_TOKEN)" >&2
  exit 1
fi
if [ -n "${LOCALSTACK_ENDPOINT:-}" ]; then
  # cdklocal wants both or neither (it cannot tell whether a custom endpoint serves S3 subdomains).
  export AWS_ENDPOINT_URL="$ENDPOINT" AWS_ENDPOINT_URL_S3="$ENDPOINT"
fi

echo "== cdklocal bootstrap ($ENDPOINT, $AWS_DEFAULT_REGION)"
cdklocal bootstrap
echo "== cdklocal deploy $STACK"
cdklocal deploy "$STACK" --require-approval never --outputs-file cdk.out/localstack-outputs.json
echo "== deployed: outputs in cdk.out/localstack-outputs.json"
echo "next: npm run test:localstack, or"
echo "  npx crawler submit https://example.com/ --stack $STACK --endpoint $ENDPOINT"

"""A corpus of realistic-looking FAKE secrets, one per common credential format.

Why: redaction, the validator's secret policy, the secrets tests of the CLI and the engine and the
Hermes end-to-end tests all need the same hard cases. Every value is derived from a fixed seed (sha256 of the
sample name), so the corpus is identical on every run, and every body carries a ``FAKE``/
``fake``/``baton`` marker or is plain derived noise: none was ever issued by a provider.

Each sample is the snippet as a user would paste it (``text``), the substrings that must never
survive redaction (``secrets``) and substrings that must survive (``keep``, e.g. the user and
host of a URL whose password is redacted).
"""

from __future__ import annotations

import base64
import hashlib
import json
from dataclasses import dataclass

UPPER = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
LOWER = "abcdefghijklmnopqrstuvwxyz"
DIGITS = "0123456789"
ALNUM = UPPER + LOWER + DIGITS
HEX = "0123456789abcdef"
B64 = ALNUM + "+/"
B64URL = ALNUM + "-_"


@dataclass(frozen=True)
class SecretSample:
    name: str
    text: str
    secrets: tuple[str, ...]
    keep: tuple[str, ...] = ()


def fake_chars(seed: str, length: int, alphabet: str = ALNUM) -> str:
    """``length`` characters from ``alphabet``, derived from ``seed`` only (deterministic)."""
    out: list[str] = []
    counter = 0
    while len(out) < length:
        block = hashlib.sha256(f"{seed}:{counter}".encode()).digest()
        out.extend(alphabet[byte % len(alphabet)] for byte in block)
        counter += 1
    return "".join(out[:length])


def _b64url_json(obj: dict[str, object]) -> str:
    raw = json.dumps(obj, separators=(",", ":"), sort_keys=True).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def _pem(kind: str, seed: str) -> str:
    body = base64.b64encode(b"baton-fake-key-material:" + hashlib.sha512(seed.encode()).digest() * 3).decode()
    lines = [body[i : i + 64] for i in range(0, len(body), 64)]
    return f"-----BEGIN {kind}-----\n" + "\n".join(lines) + f"\n-----END {kind}-----"


def _pem_body_line(pem: str) -> str:
    return pem.splitlines()[1]


def _build() -> tuple[SecretSample, ...]:
    c = fake_chars
    s: list[SecretSample] = []

    def add(name: str, text: str, *secrets: str, keep: tuple[str, ...] = ()) -> None:
        s.append(SecretSample(name, text, tuple(secrets), keep))

    # Provider API keys.
    v = "sk-" + c("openai-legacy-a", 20) + "T3BlbkFJ" + c("openai-legacy-b", 20)
    add("openai_legacy", f"OpenAI key {v} was used", v)
    v = "sk-proj-" + "FAKE" + c("openai-proj", 120, B64URL)
    add("openai_project", f"export OPENAI_API_KEY={v}", v, keep=("OPENAI_API_KEY",))
    v = "sk-svcacct-" + "FAKE" + c("openai-svc", 60, B64URL)
    add("openai_service_account", f"service account token {v}", v)
    v = "sk-ant-api03-" + "FAKE" + c("anthropic", 89, B64URL) + "AA"
    add("anthropic", f"ANTHROPIC key: {v}", v)
    v = "sk-ant-admin01-" + "FAKE" + c("anthropic-admin", 89, B64URL) + "AA"
    add("anthropic_admin", f"admin key {v}", v)
    v = "AIza" + "FAKE" + c("google", 31, B64URL)
    add("google_api_key", f"curl 'https://generativelanguage.googleapis.com/v1/models?key={v}'", v)
    v = "hf_" + "FAKE" + c("hf", 30, UPPER + LOWER)
    add("huggingface", f"huggingface-cli login --token {v}", v)
    v = "gsk_" + "FAKE" + c("groq", 48)
    add("groq", f"GROQ_API_KEY={v}", v)
    v = c("mistral", 32)
    add("mistral", f'MISTRAL_API_KEY="{v}"', v, keep=("MISTRAL_API_KEY",))
    v = c("cohere", 40)
    add("cohere", f"cohere_api_key: {v}", v)
    v = "xai-" + "FAKE" + c("xai", 76)
    add("xai", f"XAI token {v}", v)
    v = "pplx-" + "FAKE" + c("pplx", 44)
    add("perplexity", f"key={v}", v)
    v = "r8_" + "FAKE" + c("replicate", 33)
    add("replicate", f"REPLICATE_API_TOKEN={v}", v)

    # Cloud keys.
    v = "AKIA" + "FAKE" + c("aws-akia", 12, UPPER + DIGITS)
    add("aws_access_key_id", f"aws_access_key_id = {v}", v)
    v = "ASIA" + "FAKE" + c("aws-asia", 12, UPPER + DIGITS)
    add("aws_session_key_id", f"temporary credentials {v} expire soon", v)
    v = c("aws-secret", 40, B64)
    add("aws_secret_access_key", f"AWS_SECRET_ACCESS_KEY={v}", v)
    pem = _pem("PRIVATE KEY", "gcp")
    sa = {
        "type": "service_account",
        "project_id": "baton-fake-project",
        "private_key_id": c("gcp-key-id", 40, HEX),
        "private_key": pem + "\n",
        "client_email": "ci@baton-fake-project.iam.gserviceaccount.com",
    }
    add("gcp_service_account_json", json.dumps(sa, indent=2), _pem_body_line(pem), keep=("baton-fake-project",))
    v = c("azure-storage", 86, B64) + "=="
    add("azure_storage_connection_string",
        f"DefaultEndpointsProtocol=https;AccountName=batonfake;AccountKey={v};EndpointSuffix=core.windows.net",
        v, keep=("AccountName=batonfake",))
    v = c("azure-sb", 43, B64) + "="
    add("azure_service_bus_connection_string",
        f"Endpoint=sb://batonfake.servicebus.windows.net/;SharedAccessKeyName=RootManageSharedAccessKey;"
        f"SharedAccessKey={v}", v)

    # Source forges, chat, payments, package registries, messaging.
    v = "ghp_" + "FAKE" + c("ghp", 32)
    add("github_classic_pat", f"git clone https://{v}@github.com/acme/app.git", v)
    v = "gho_" + "FAKE" + c("gho", 32)
    add("github_oauth", f"GITHUB_TOKEN: {v}", v)
    v = "ghs_" + "FAKE" + c("ghs", 32)
    add("github_app_installation", f"installation token {v}", v)
    v = "github_pat_" + "11FAKE" + c("gh-fine-a", 16, UPPER + DIGITS) + "_" + c("gh-fine-b", 59)
    add("github_fine_grained_pat", f"token={v}", v)
    v = "glpat-" + "FAKE" + c("gitlab", 16, B64URL)
    add("gitlab_pat", f"PRIVATE-TOKEN: {v}", v)
    v = "-".join(("xoxb", c("slack-a", 12, DIGITS), c("slack-b", 13, DIGITS),
                  "fake" + c("slack-c", 20, LOWER + DIGITS)))
    add("slack_bot_token", f"slack bot token {v}", v)
    v = "-".join(("xoxp", c("slackp-a", 12, DIGITS), c("slackp-b", 12, DIGITS), c("slackp-c", 13, DIGITS),
                  c("slackp-d", 32, HEX)))
    add("slack_user_token", f"SLACK_USER_TOKEN={v}", v)
    path = "T" + c("hook-t", 10, UPPER + DIGITS) + "/B" + c("hook-b", 10, UPPER + DIGITS) + "/" + c("hook-c", 24)
    add("slack_webhook", f"posted to https://hooks.slack.com/services/{path}", path)
    v = "sk_live_" + "FAKE" + c("stripe", 44)
    add("stripe_live_secret", f"stripe.api_key = '{v}'", v)
    v = "rk_live_" + "FAKE" + c("stripe-rk", 44)
    add("stripe_restricted", f"restricted key {v}", v)
    v = "sk_test_" + "FAKE" + c("stripe-test", 44)
    add("stripe_test_secret", f"test mode key {v}", v)
    v = "whsec_" + "FAKE" + c("stripe-wh", 28)
    add("stripe_webhook_secret", f"STRIPE_WEBHOOK_SECRET={v}", v)
    v = "npm_" + "FAKE" + c("npm", 32)
    add("npm_token", f"//registry.npmjs.org/:_authToken={v}", v, keep=("registry.npmjs.org",))
    v = "pypi-AgEIcHlwaS5vcmc" + "FAKE" + c("pypi", 120, B64URL)
    add("pypi_token", f"twine upload -u __token__ -p {v} dist/*", v)
    v = "SK" + c("twilio-sk", 32, HEX)
    add("twilio_api_key", f"twilio api key {v}", v)
    v = c("twilio-auth", 32, HEX)
    add("twilio_auth_token", f"TWILIO_AUTH_TOKEN={v}", v)
    v = "SG." + c("sendgrid-a", 22, B64URL) + "." + c("sendgrid-b", 43, B64URL)
    add("sendgrid", f"SENDGRID key {v}", v)
    v = "M" + c("discord-a", 25, B64URL) + "." + c("discord-b", 6, B64URL) + "." + c("discord-c", 27, B64URL)
    add("discord_bot_token", f"discord bot {v}", v)
    v = c("discord-wh", 68, B64URL)
    add("discord_webhook", f"https://discord.com/api/webhooks/{c('discord-id', 18, DIGITS)}/{v}", v)
    v = c("telegram-id", 10, DIGITS) + ":AA" + c("telegram", 33, B64URL)
    add("telegram_bot_token", f"telegram {v}", v)
    v = c("mailchimp", 32, HEX) + "-us6"
    add("mailchimp", f"mailchimp key {v}", v)
    v = "shpat_" + c("shopify", 32, HEX)
    add("shopify_access_token", f"X-Shopify-Access-Token: {v}", v)
    v = "dapi" + c("databricks", 32, HEX)
    add("databricks_token", f"databricks token {v}", v)
    v = "AGE-SECRET-KEY-1" + c("age", 58, UPPER + DIGITS)
    add("age_secret_key", f"age key {v}", v)

    # Key material and tokens.
    pem = _pem("RSA PRIVATE KEY", "rsa")
    add("pem_rsa_private_key", f"key file:\n{pem}\nend of file", *pem.splitlines()[1:-1], keep=("end of file",))
    pem = _pem("OPENSSH PRIVATE KEY", "openssh")
    add("pem_openssh_private_key", pem, *pem.splitlines()[1:-1])
    pem = _pem("EC PRIVATE KEY", "ec")
    add("pem_ec_private_key", f"cat ~/.ssh/id_ec\n{pem}", *pem.splitlines()[1:-1])
    v = ".".join((_b64url_json({"alg": "HS256", "typ": "JWT"}),
                  _b64url_json({"sub": "baton-fake-user", "iat": 1700000000}),
                  c("jwt-sig", 43, B64URL)))
    add("jwt", f"id_token {v}", v)
    v = "FAKE" + c("bearer", 48, B64URL)
    add("bearer_header", f'curl -H "Authorization: Bearer {v}" https://api.example.test/v1', v)
    v = base64.b64encode(f"baton:{c('basic', 16)}".encode()).decode()
    add("basic_auth_header", f"Authorization: Basic {v}", v)
    v = "Fake" + c("url-pass", 14)
    add("url_password", f"DATABASE_URL=postgres://baton:{v}@db.internal:5432/app", v,
        keep=("postgres://baton:", "@db.internal:5432/app"))
    v = "Fake" + c("redis-pass", 14)
    add("redis_url_password", f"redis://default:{v}@cache.internal:6379/0", v,
        keep=("redis://default:", "@cache.internal"))

    # .env / JSON / YAML assignments of secret-named variables.
    v = "fake-" + c("export-pw", 14)
    add("env_export_password", f'export DB_PASSWORD="{v}"', v, keep=("DB_PASSWORD",))
    v = c("env-api-key", 24)
    add("env_api_key", f"API_KEY={v}", v, keep=("API_KEY",))
    v = "fake" + c("json-secret", 20)
    add("json_secret_field", json.dumps({"name": "svc", "secret": v}), v, keep=('"name": "svc"',))
    v = "Fake" + c("yaml-pw", 12) + "!"
    add("yaml_password", f"database:\n  user: baton\n  password: {v}\n", v, keep=("user: baton",))
    v = c("client-secret", 34, B64URL)
    add("oauth_client_secret", f"client_secret={v}&grant_type=client_credentials", v, keep=("grant_type",))

    # High-entropy value with no telling name.
    v = c("entropy", 44, B64)
    add("high_entropy_unnamed", f"the cookie value is {v} (copied from devtools)", v)
    return tuple(s)


SAMPLES: tuple[SecretSample, ...] = _build()
SAMPLES_BY_NAME: dict[str, SecretSample] = {sample.name: sample for sample in SAMPLES}

# Strings that look technical but are not secrets: redaction must leave them byte-for-byte.
NON_SECRETS: tuple[str, ...] = (
    "src/baton_engine/handoff/redact.py",
    "/home/dev/projects/baton/tests/policy/test_validate_paths.py",
    "sha256:" + hashlib.sha256(b"baton").hexdigest(),
    hashlib.sha1(b"baton").hexdigest(),
    "0190b7f2-8c1d-7a3e-9f42-6b1c2d3e4f50",
    "2026-11-30T02:26:53Z",
    "2026-11-30T02:26:53.123Z",
    "20261130T022653Z--6b1c2d3e.json",
    "git:" + hashlib.sha1(b"head").hexdigest(),
    "test_redaction_removes_every_secret_from_nested_records",
    "HandoffRecordValidationError2024",
    "https://baton.dev/schemas/handoff/v0.1.json",
    "pytest tests/policy -q --maxfail=1",
    "The password reset flow now sends one email.",
    "Rotate the API key before release.",
    "token_count = 1200",
    "max_tokens: 4096",
    "ssh://git@github.com/acme/app.git",
    "sha512-" + base64.b64encode(hashlib.sha512(b"baton").digest()).decode(),
    "golang.org/x/text v0.14.0 h1:" + base64.b64encode(hashlib.sha256(b"baton").digest()).decode(),
)


def secret_values() -> tuple[str, ...]:
    """Every value that must never be persisted, logged or sent to a model."""
    return tuple(secret for sample in SAMPLES for secret in sample.secrets)


def leaky_document(count: int = len(SAMPLES), *, offset: int = 0) -> str:
    """``count`` corpus snippets (rotating from ``offset``) as one paste-like text, e.g. tool output."""
    chosen = [SAMPLES[(offset + i) % len(SAMPLES)] for i in range(count)]
    return "\n".join(f"# {sample.name}\n{sample.text}" for sample in chosen) + "\n"

"""Schemathesis hooks for `.ci/api-tools.sh`: keep the fuzzing run fast and its findings meaningful.

- `wait_ms` is a long-poll: a schema-valid value up to 30000 makes the server wait that long when
  nothing is queued. Valid values are kept under 26 ms (values outside 0..=30000 are sent as
  generated and must be refused).
- `Idempotency-Key`: the generator draws the same few keys again and again (the example, `"0"`,
  ...), and a key reused with another body is rightly refused with 422, so most POSTs would never
  reach the mailbox. Every valid key gets a unique suffix; keys the document forbids are sent
  as generated. (Replays are covered by tests/api and the generated-client run.)
- JSON integers: JSON Schema counts `5.0` as an integer, the service (as documented) accepts only
  integers written without a fraction, so integral floats in generated bodies are sent as `5`.
- A case that leaves out the bearer token is sent exactly as generated.
"""

import itertools
import re
import sys
import uuid
from collections.abc import MutableMapping

import schemathesis

if sys.version_info < (3, 12):
    # CPython 3.11 can raise "SystemError: AST constructor recursion depth mismatch" when
    # Hypothesis parses a large source file to describe a lambda (only for a strategy's repr).
    from hypothesis.internal import lambda_sources

    lambda_sources.lambda_description = lambda f: "lambda"

MAX_FUZZ_WAIT_MS = 25
KEY_MAX_LEN = 255
VALID_KEY = re.compile(r"[\t\x20-\x7E]*[\x21-\x7E][\t\x20-\x7E]*")
_unique = itertools.count()
_RUN = uuid.uuid4().hex[:8]


def _integral_floats_to_ints(value):
    if isinstance(value, float) and value.is_integer() and abs(value) < 2**63:
        return int(value)
    if isinstance(value, list):
        return [_integral_floats_to_ints(v) for v in value]
    if isinstance(value, dict):
        return {k: _integral_floats_to_ints(v) for k, v in value.items()}
    return value


def _short_wait(query):
    if not isinstance(query, MutableMapping) or "wait_ms" not in query:
        return
    value = query["wait_ms"]
    if isinstance(value, bool):
        return
    if isinstance(value, str) and value.isdigit():
        number = int(value)
    elif isinstance(value, int):
        number = value
    else:
        return
    if MAX_FUZZ_WAIT_MS < number <= 30000:
        query["wait_ms"] = number % (MAX_FUZZ_WAIT_MS + 1)


def _unique_key(headers):
    if not isinstance(headers, MutableMapping):
        return
    for name in list(headers):
        if name.lower() != "idempotency-key":
            continue
        key = headers[name]
        if isinstance(key, str) and len(key) <= KEY_MAX_LEN and VALID_KEY.fullmatch(key):
            suffix = f"~{_RUN}-{next(_unique)}"
            headers[name] = key[: KEY_MAX_LEN - len(suffix)] + suffix


def _has_authorization(headers):
    return isinstance(headers, MutableMapping) and any(name.lower() == "authorization" for name in headers)


@schemathesis.hook
def before_call(context, case, kwargs):
    # A case that leaves out the bearer token checks the 401 answer: send it exactly as generated
    # (editing it would make Schemathesis re-derive its metadata and add the token back).
    if not _has_authorization(case.headers):
        return
    _short_wait(case.query)
    _unique_key(case.headers)
    if isinstance(case.body, (dict, list)):
        case.body = _integral_floats_to_ints(case.body)

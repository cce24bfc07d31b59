# Managed by blackwell-serving (Gateway): the gateway's key check, LiteLLM's
# `general_settings.custom_auth` (components/gateway.py says why), written by `pulumi up` beside
# the routes and mounted read-only into the container (do not edit on the node).
#
# LiteLLM without a database answers any key but its master key with HTTP 400 "No connected db."
# (it looks such keys up as virtual keys in the database it does not have). An OpenAI-compatible
# endpoint answers a wrong or missing key with 401 and OpenAI's error body, which is what clients,
# their retry logic and monitoring act on. This check runs in place of LiteLLM's own for every
# authenticated route: the one key of the stack (LiteLLM's master key, as the config names it)
# is accepted as the master key is; anything else is refused with 401. The key is never logged,
# never echoed in an answer, never handed on (the caller's identity carries LiteLLM's alias for
# the master key, as its own master-key path does).
"""The gateway's key check: 401 and OpenAI's error body for a missing or wrong key."""

import secrets

from litellm.proxy._types import LitellmUserRoles, ProxyException, UserAPIKeyAuth

try:  # what LiteLLM's own master-key path names the caller (1.106.12; older images lack the name)
    from litellm.constants import LITELLM_PROXY_MASTER_KEY_ALIAS
except ImportError:
    LITELLM_PROXY_MASTER_KEY_ALIAS = "litellm_proxy_master_key"

MISSING = ("You didn't provide an API key. Send it as a bearer token: "
           "`Authorization: Bearer KEY` (the gateway's key, gateway.api_key).")
WRONG = "Incorrect API key provided. Use the gateway's key (gateway.api_key of the stack)."
UNSET = "The gateway has no key configured, so it accepts none; ask its operator."


def refused(message: str) -> ProxyException:
    """401 with OpenAI's body: {"error": {"message", "type", "param", "code"}}."""
    return ProxyException(message=message, type="invalid_request_error", param=None, code=401)


def accepted(api_key, master_key) -> bool:
    """Whether `api_key` (the request's key, its `Bearer ` taken off) is the gateway's key."""
    if not isinstance(master_key, str) or not master_key:
        raise refused(UNSET)
    if not isinstance(api_key, str) or not api_key:
        raise refused(MISSING)
    if not secrets.compare_digest(api_key.encode(), master_key.encode()):
        raise refused(WRONG)
    return True


async def check_key(request, api_key):
    """LiteLLM's custom_auth hook: the caller's identity, or a 401."""
    from litellm.proxy import proxy_server  # the master key as LiteLLM resolved it from the config

    accepted(api_key, proxy_server.master_key)
    return UserAPIKeyAuth(api_key=LITELLM_PROXY_MASTER_KEY_ALIAS, user_role=LitellmUserRoles.PROXY_ADMIN,
                          user_id=proxy_server.litellm_proxy_admin_name)

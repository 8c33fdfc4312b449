"""The secret-key check: every process on one store must seal with the same key.

Replicas seal secret header values, error details and approval inputs with
``HOOKGATE_SECRET_KEY``. A replica given another key would write values the others cannot open
and fail on every value they wrote. The first gateway with a key stores a value sealed with it
(``hookgate_state.key_check``); every later start opens it, and a key that cannot is refused
at start with a message that says why.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from hookgate.store.base import StoreError
from hookgate.store.sql.base import SqlBackend

if TYPE_CHECKING:
    from hookgate.secrets.keyring import Keyring

__all__ = ["SecretKeyMismatch", "SecretKeyCheck"]

_CHECK_TEXT: Final = "hookgate secret key check"
_CHECK_AAD: Final = "hookgate_state:key_check"


class SecretKeyMismatch(StoreError):
    """This process's secret key is not the one the store's sealed values were made with."""


class SecretKeyCheck(SqlBackend):
    async def verify_secret_key(self, keyring: Keyring | None) -> None:
        from hookgate.secrets.keyring import SecretError

        async with self._write() as sql:
            await self._lock_bootstrap(sql)  # two first starts: one stores the check
            check = await sql.fetchval("SELECT key_check FROM hookgate_state WHERE id = 1")
            if check is None:
                if keyring is not None:
                    await sql.execute(
                        "UPDATE hookgate_state SET key_check = ? WHERE id = 1",
                        keyring.seal_text(_CHECK_TEXT, _CHECK_AAD),
                    )
                return
            if keyring is None:
                raise SecretKeyMismatch(
                    "this store holds values sealed with a secret key, and this process has "
                    "none: set HOOKGATE_SECRET_KEY (or HOOKGATE_SECRET_KEY_FILE) to the key "
                    "every other replica uses"
                )
            try:
                keyring.open_text(str(check), _CHECK_AAD)
            except SecretError:
                raise SecretKeyMismatch(
                    "this process's secret key (HOOKGATE_SECRET_KEY, HOOKGATE_SECRET_KEY_FILE "
                    "or the data directory's secret.key) is not the key this store's sealed "
                    "values were made with: every replica on a store needs the same "
                    "HOOKGATE_SECRET_KEY; to rotate, list the new key first and the old one "
                    "after it"
                ) from None
            if keyring.sealed_with(str(check)) != keyring.active_kid:
                # Rotated: the check follows the active key, so the old one can be dropped.
                await sql.execute(
                    "UPDATE hookgate_state SET key_check = ? WHERE id = 1",
                    keyring.seal_text(_CHECK_TEXT, _CHECK_AAD),
                )

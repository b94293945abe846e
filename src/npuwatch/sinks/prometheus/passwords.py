"""HTTP basic authentication against bcrypt hashes, as Prometheus's web configuration has them.

bcrypt is checked by the `bcrypt` package when it is installed, else by the system's crypt
library (libxcrypt, which every current Linux distribution ships and which implements `$2b$`),
called through ctypes. The library is tried once with a published test vector before it is
trusted. When neither is there, asking for basic authentication is a configuration error.
"""

from __future__ import annotations

import base64
import binascii
import ctypes
import ctypes.util
import hashlib
import hmac
import importlib
import re
import threading
from collections.abc import Callable, Mapping

Checker = Callable[[bytes, bytes], bool]
"""(password, bcrypt hash) → whether the password is the one hashed."""

BCRYPT_HASH = re.compile(r"^\$2[aby]\$(0[4-9]|[12][0-9]|3[01])\$[./A-Za-z0-9]{53}$")

_KNOWN_ANSWER = (b"U*U", b"$2a$05$CCCCCCCCCCCCCCCCCCCCC.E5YPO9kmyuRGyh0XouQYb4YMJKvyOeW")
"""A test vector of OpenBSD's bcrypt (also in Openwall's crypt_blowfish)."""
_CRYPT_OUTPUT_SIZE = 32768
"""sizeof(struct crypt_data) in libxcrypt: the buffer crypt_rn works in."""
_REMEMBERED = 64
"""Credentials remembered after a successful check, so that a scrape every few seconds does not
pay for bcrypt each time (it is slow by design)."""
_DUMMY_HASH = b"$2b$10$CCCCCCCCCCCCCCCCCCCCC.sJUZ5QSF9hkGvMcNbbyO2uU5e3oY/yG"
"""Checked for an unknown user, so that a wrong user name takes as long as a wrong password."""


class NoBcrypt(RuntimeError):
    """Neither the `bcrypt` package nor a crypt library that knows bcrypt is available."""


def find_bcrypt() -> Checker:
    """The best bcrypt checker on this machine; raises NoBcrypt when there is none."""
    try:
        module = importlib.import_module("bcrypt")
    except ImportError:
        pass
    else:
        checkpw: Checker = module.checkpw
        return checkpw
    checker = _libcrypt_checker()
    if checker is None:
        raise NoBcrypt(
            "checking bcrypt hashes needs the bcrypt package (pip install bcrypt) or a crypt "
            "library that implements bcrypt (libxcrypt)"
        )
    return checker


def _libcrypt_checker() -> Checker | None:
    name = ctypes.util.find_library("crypt")
    if name is None:
        return None
    try:
        library = ctypes.CDLL(name)
        crypt_rn = library.crypt_rn
    except (OSError, AttributeError):
        return None
    crypt_rn.restype = ctypes.c_char_p
    crypt_rn.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_void_p, ctypes.c_int]

    def check(password: bytes, hashed: bytes) -> bool:
        if b"\0" in password or not BCRYPT_HASH.match(hashed.decode("ascii", "replace")):
            return False  # C strings end at NUL; any other setting is not bcrypt
        work = ctypes.create_string_buffer(_CRYPT_OUTPUT_SIZE)
        result: bytes | None = crypt_rn(password, hashed, work, _CRYPT_OUTPUT_SIZE)
        return result is not None and hmac.compare_digest(result, hashed)

    password, hashed = _KNOWN_ANSWER
    if not check(password, hashed) or check(b"U*V", hashed):
        return None
    return check


class BasicAuth:
    """Checks the `Authorization` header of a request against users and their bcrypt hashes."""

    def __init__(self, users: Mapping[str, str], checker: Checker) -> None:
        self._users = {name: hashed.encode("ascii") for name, hashed in users.items()}
        self._check = checker
        self._lock = threading.Lock()
        self._remembered: set[bytes] = set()

    def allows(self, authorization: str | None) -> bool:
        """Whether the header value (`Basic base64(user:password)`) names a user and their
        password."""
        credentials = _credentials(authorization)
        if credentials is None:
            return False
        user, password = credentials
        hashed = self._users.get(user)
        key = hashlib.sha256(user.encode() + b"\0" + password + b"\0" + (hashed or b"")).digest()
        with self._lock:
            if key in self._remembered:
                return True
        if hashed is None:
            self._check(password, _DUMMY_HASH)
            return False
        if not self._check(password, hashed):
            return False
        with self._lock:
            if len(self._remembered) >= _REMEMBERED:
                self._remembered.clear()
            self._remembered.add(key)
        return True


def _credentials(authorization: str | None) -> tuple[str, bytes] | None:
    if authorization is None:
        return None
    scheme, _, encoded = authorization.partition(" ")
    if scheme.lower() != "basic":
        return None
    try:
        decoded = base64.b64decode(encoded.strip(), validate=True)
    except (binascii.Error, ValueError):
        return None
    user, colon, password = decoded.partition(b":")
    if not colon:
        return None
    return user.decode("utf-8", "replace"), password

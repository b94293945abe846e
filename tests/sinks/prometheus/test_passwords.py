"""Basic authentication against bcrypt hashes: the checker this machine has, and the header."""

from __future__ import annotations

import base64

import pytest

from npuwatch.sinks.prometheus.passwords import BasicAuth, find_bcrypt

# Published bcrypt test vectors (OpenBSD, Openwall crypt_blowfish), and one made with `$2b$`.
VECTOR = ("U*U", "$2a$05$CCCCCCCCCCCCCCCCCCCCC.E5YPO9kmyuRGyh0XouQYb4YMJKvyOeW")
VECTOR_2B = ("pw", "$2b$10$CCCCCCCCCCCCCCCCCCCCC.sJUZ5QSF9hkGvMcNbbyO2uU5e3oY/yG")


def header(user: str, password: str) -> str:
    return "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()


def test_this_machine_checks_bcrypt_hashes() -> None:
    check = find_bcrypt()

    assert check(VECTOR[0].encode(), VECTOR[1].encode())
    assert check(VECTOR_2B[0].encode(), VECTOR_2B[1].encode())
    assert check(b"pw", VECTOR_2B[1].replace("$2b$", "$2y$").encode())


def test_a_wrong_password_or_a_hash_that_is_not_bcrypt_is_refused() -> None:
    check = find_bcrypt()

    assert not check(b"U*V", VECTOR[1].encode())
    assert not check(b"U*U", b"boXRQH/Q31k46")  # a DES crypt hash: never taken for bcrypt


def test_a_user_with_the_right_password_is_allowed() -> None:
    auth = BasicAuth({"prometheus": VECTOR[1]}, find_bcrypt())

    assert auth.allows(header("prometheus", "U*U"))


@pytest.mark.parametrize(
    "authorization",
    [
        None,
        "",
        header("prometheus", "U*V"),
        header("grafana", "U*U"),
        "Bearer abc",
        "Basic not-base64!",
        "Basic " + base64.b64encode(b"no colon").decode(),
    ],
)
def test_anything_else_is_refused(authorization: str | None) -> None:
    auth = BasicAuth({"prometheus": VECTOR[1]}, find_bcrypt())

    assert not auth.allows(authorization)


def test_a_password_once_accepted_is_not_hashed_again() -> None:
    calls = []

    def check(password: bytes, hashed: bytes) -> bool:
        calls.append(password)
        return password == b"right"

    auth = BasicAuth({"prometheus": VECTOR[1]}, check)
    for _ in range(3):
        assert auth.allows(header("prometheus", "right"))
    assert not auth.allows(header("prometheus", "wrong"))
    assert not auth.allows(header("prometheus", "wrong"))

    assert calls == [b"right", b"wrong", b"wrong"]


def test_an_unknown_user_costs_a_hash_check_like_a_known_one() -> None:
    calls = []

    def check(password: bytes, hashed: bytes) -> bool:
        calls.append(hashed)
        return True

    auth = BasicAuth({"prometheus": VECTOR[1]}, check)

    assert not auth.allows(header("grafana", "anything"))
    assert len(calls) == 1

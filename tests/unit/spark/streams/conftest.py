import random

import pytest


def make_random_keys(seed: int, count: int, max_length: int = 80) -> list[bytes]:
    """Keys of every tail length, half of them with bytes >= 0x80 where the hash variants differ."""
    rng = random.Random(seed)
    keys = []
    for _ in range(count):
        length = rng.randrange(max_length + 1)
        top = 0x100 if rng.random() < 0.5 else 0x80
        keys.append(bytes(rng.randrange(top) for _ in range(length)))
    return keys


@pytest.fixture(scope="session")
def random_keys() -> list[bytes]:
    return make_random_keys(seed=20240611, count=5000)

"""Cassandra's MurmurHash3 variant: published vectors, an independent oracle, and the three implementations."""

import struct

import mmh3
import numpy as np
import pytest
from cassandra.cmurmur3 import murmur3 as driver_c_murmur3

from spark.streams import murmur3
from spark.streams.tokens import MAX_TOKEN, MIN_TOKEN, token_of_key, tokens_of_keys

# ScyllaDB test/boost/murmur_hash_test.cc: seed 0xcafebabe, every prefix of this sequence.
SEQUENCE = b"0123456789" * 6
PREFIX_HASHES = [
    (13907055927958326333, 10701141902926764871), (16872847325129109440, 5125572542408278394),
    (11916219991241122015, 747256650753853469), (1492790099208671403, 16635411534431524239),
    (16764172998150925140, 7440789969466348974), (6846275695158209935, 11251493995290334439),
    (1075204625779168927, 3453614304122336174), (1404180555660983881, 13684781009779545989),
    (10185829608361057848, 1102754042417891721), (12850382803381855486, 7404649381971707328),
    (972515366528881960, 4507841639019527002), (9279316204399455969, 9712180353841837616),
    (16558181491899334208, 17507114537353308311), (12977947643557220239, 8334539845739718010),
    (3743840537387886281, 15297576726012815871), (10675210326497176757, 11200838847539594424),
    (16363715880225337291, 2866762944263215884), (1272769995400892137, 1744366104172354624),
    (17426490373034063702, 12666853004117709655), (10757142341798556363, 3984810732374497004),
    (4593020710048021108, 14359610319437287264), (18212086870806388719, 7490375939640747191),
    (11209001888824275013, 6491913312740217486), (17601044365330203914, 1779402119744049378),
    (3916812090790925532, 17533572508631620015), (10113761195332211536, 4163484992388084181),
    (4353425943622404193, 1830165015196477722), (3904126367597302219, 7917741892387588561),
    (7077450301176172141, 8070185570157969067), (6331768922468785771, 9311778359071820659),
    (7715740891587706229, 16510772505395753023), (4510384582422222090, 9352450339278885986),
    (6746132289648898302, 15402380546251654069), (1315904697672087497, 2686857386486814319),
    (16122226135709041149, 1278536837434550412), (6449104926034509627, 8809488279970194649),
    (9047965986959166273, 14963749820458851455), (18095596803119563681, 2806499127062067052),
    (545238237267145238, 4583663570136224396), (12335897404061220746, 8643308333771385742),
    (15016951849151361171, 13012972687708005422), (12896848725136832414, 9881710852371170521),
    (17900663530283054991, 9606960248070178723), (4513619521783122834, 4823611535250518791),
    (15572858348470724038, 4882998878774456634), (3464540909110937960, 14591983318346304410),
    (2951301498066556278, 3029976006973164807), (7848995488883197496, 10621954303326018594),
    (5702723040652442467, 11325339470689059424), (870698890980252409, 8294946103885186165),
    (423348447487367835, 4067674294039261619), (397951862030142664, 17073640849499096681),
    (9374556141781683538, 10333311062251856416), (1097707041202763764, 2870200096551238743),
    (11493051326088411054, 12348796263566330575), (15865059192259516415, 4808544582161036476),
    (2717981543414886593, 5944564527643476706), (887521262173735642, 3558550013200985442),
    (9496424291456600748, 9845949835154361896), (1589012859535948937, 7402826160257180747),
]


@pytest.mark.parametrize("length", range(len(PREFIX_HASHES)))
def test_scylla_prefix_vectors(length):
    h1, h2 = murmur3.x64_128(SEQUENCE[:length], seed=0xCAFEBABE)
    assert (h1 % 2**64, h2 % 2**64) == PREFIX_HASHES[length]


@pytest.mark.parametrize(
    ("key", "token"),
    [
        # Tail bytes >= 0x80 (sign extension matters): int -1, bigint -1, int 128, text "é".
        (struct.pack(">i", -1), 7297452126230313552),
        (struct.pack(">q", -1), 7071048584287372947),
        (struct.pack(">i", 128), -9081975895656599623),
        ("é".encode(), 5461403030378599040),
        (bytes(range(0x80, 0x80 + 31)), -9222542793393665168),
    ],
)
def test_sign_extended_tail_vectors(key, token):
    # Values cross-checked with the DataStax driver's C implementation of Cassandra's hash.
    assert driver_c_murmur3(key) == token
    assert token_of_key(key) == token
    assert token_of_key(key, fast=False) == token
    assert mmh3.hash64(key, 0, signed=True)[0] != token  # the standard algorithm gets these wrong


def test_pure_matches_independent_driver_implementation(random_keys):
    for key in random_keys:
        if key:
            assert murmur3.x64_128(key)[0] == driver_c_murmur3(key), key.hex()


def test_vectorized_matches_pure(random_keys):
    vectorized = murmur3.h1_batch(random_keys)
    assert vectorized.dtype == np.int64
    assert [int(h) for h in vectorized] == [murmur3.x64_128(key)[0] for key in random_keys]


def test_vectorized_handles_one_key_and_no_keys():
    assert murmur3.h1_batch([]).shape == (0,)
    assert int(murmur3.h1_batch([b"test"])[0]) == -6017608668500074083


def test_mmh3_fast_path_is_exact_where_claimed(random_keys):
    agreeing = [key for key in random_keys if murmur3.mmh3_agrees(key)]
    disagreeing = [key for key in random_keys if not murmur3.mmh3_agrees(key)]
    assert len(agreeing) > 1000 and len(disagreeing) > 1000
    for key in agreeing:
        assert mmh3.hash64(key, 0, signed=True)[0] == murmur3.x64_128(key)[0]
    # Outside the claim the standard hash is (almost always) wrong, which is why the check exists.
    differing = sum(mmh3.hash64(key, 0, signed=True)[0] != murmur3.x64_128(key)[0] for key in disagreeing)
    assert differing == len(disagreeing)


def test_mmh3_agrees_looks_only_at_the_tail():
    assert murmur3.mmh3_agrees(b"\xff" * 16)  # all body, no tail
    assert murmur3.mmh3_agrees(b"\xff" * 16 + b"abc")
    assert not murmur3.mmh3_agrees(b"a" * 16 + b"\x80")
    assert murmur3.mmh3_agrees(b"")


def test_token_paths_agree(random_keys):
    vectorized = tokens_of_keys(random_keys)
    fast = [token_of_key(key) for key in random_keys]
    pure = [token_of_key(key, fast=False) for key in random_keys]
    assert fast == pure == [int(t) for t in vectorized]


def test_empty_key_is_the_minimum_token():
    assert token_of_key(b"") == MIN_TOKEN
    assert token_of_key(b"", fast=False) == MIN_TOKEN
    assert tokens_of_keys([b"", b"\x00", b""]).tolist() == [MIN_TOKEN, 5048724184180415669, MIN_TOKEN]


def test_long_min_hash_is_normalized_to_long_max(monkeypatch):
    # No known key hashes to Long.MIN_VALUE, so pretend one does.
    monkeypatch.setattr(murmur3, "x64_128", lambda key: (MIN_TOKEN, 0))
    monkeypatch.setattr(murmur3, "h1_batch", lambda keys: np.full(len(keys), MIN_TOKEN, dtype=np.int64))
    assert token_of_key(b"\x80", fast=False) == MAX_TOKEN
    assert tokens_of_keys([b"\x80", b""]).tolist() == [MAX_TOKEN, MIN_TOKEN]

"""The search of a batch's texts for the words of every rule: it may find more than a test needs,
never less."""

from __future__ import annotations

from npuwatch.rules.condition import And, Comparison, Node, Not, Or
from npuwatch.rules.word_search import ORIGINAL, TEXT, WordSearch


def contains(word: str, field: str = "message") -> Comparison:
    return Comparison(field, "contains", (word,), "", 0)


def pattern(source: str, flags: str = "") -> Comparison:
    return Comparison("message", "~", (source,), flags, 0)


LEVEL = Comparison("log.level", "==", ("ERROR",), "", 0)


def search_of(*conditions: Node) -> WordSearch:
    return WordSearch(conditions)


def test_the_texts_that_hold_a_word_are_found_once_each_in_order() -> None:
    words = search_of(contains("disk"), pattern("time ?out", "i"))
    texts = ["nothing", "disk full, disk gone", "a TimeOut", "", "disk", "quiet"]
    assert words.holders(TEXT, texts) == [1, 2, 4]


def test_texts_that_are_not_ascii_are_found_by_their_characters_not_their_bytes() -> None:
    words = search_of(contains("失败"), pattern("timeout", "i"))
    texts = ["编译失败", "中文", "中文 TIMEOUT", "ascii", "错误失败了"]
    assert words.holders(TEXT, texts) == [0, 2, 4]


def test_a_case_insensitive_word_is_found_as_re2_folds_it() -> None:
    # The Kelvin sign is a k to str.lower and to RE2: the pattern's own test matches it.
    words = search_of(pattern("kernel panic", "i"))
    assert words.holders(TEXT, ["\u212aernel panic", "kernel pan"]) == [0]


def test_a_lone_surrogate_is_searched_without_an_error() -> None:
    words = search_of(contains("boom"))
    assert words.holders(TEXT, ["\ud800 boom", "\udfff"]) == [0]


def test_a_word_across_lines_is_found_in_the_text_it_is_in() -> None:
    words = search_of(pattern("long\n  alpha"))
    assert words.holders(TEXT, ["x", "exec ran long\n  alpha", "long"]) == [1]


def test_words_of_the_original_text_are_searched_apart_from_the_message() -> None:
    words = search_of(contains("RUNTIME(33", "event.original"), contains("boom"))
    assert words.holders(ORIGINAL, ["[ERROR] RUNTIME(3300,p) boom", "[ERROR] GE(1,p)"]) == [0]
    assert words.holders(TEXT, ["RUNTIME(3300", "boom"]) == [1]


def test_each_text_found_says_which_comparisons_words_it_holds() -> None:
    disk, timeout = contains("disk"), pattern("time ?out", "i")
    words = search_of(disk, timeout)
    of_disk, of_timeout = words.needed(disk), words.needed(timeout)
    assert of_disk is not None and of_timeout is not None and of_disk != of_timeout
    assert words.groups_in(TEXT, "disk TIME OUT") == of_disk | of_timeout
    assert words.groups_in(TEXT, "a disk") == of_disk
    assert words.groups_in(TEXT, "nothing") == 0


def test_a_condition_needs_words_only_where_every_way_to_be_true_needs_them() -> None:
    disk, fan = contains("disk"), contains("fan")
    words = search_of(disk, fan)
    both = words.needed(Or((disk, fan), 0))
    assert both is not None and both.bit_count() == 2
    assert words.needed(And((LEVEL, disk), 0)) == words.needed(disk)
    assert words.needed(Or((disk, LEVEL), 0)) is None  # an ERROR without "disk" matches
    assert words.needed(Not(disk, 0)) is None  # `not message contains disk`: no word at all
    assert words.needed(LEVEL) is None
    assert words.needed(pattern(".*")) is None  # a pattern without words
    assert words.needed(contains("")) is None  # every text holds the empty word


def test_fields_that_are_not_text_need_no_word() -> None:
    host = Comparison("host.name", "contains", ("node",), "", 0)
    tags = Comparison("ascend.tags", "==", ("Timeout",), "", 0)
    words = search_of(host, tags)
    assert words.needed(host) is None and words.needed(tags) is None

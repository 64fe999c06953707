"""Ids and timestamps: formats, ordering and next-id allocation, including property tests."""

from __future__ import annotations

import re
import uuid
from datetime import UTC, datetime, timedelta, timezone

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from baton_engine.errors import UserInputError
from baton_engine.handoff import ids

AWARE = st.datetimes(
    min_value=datetime(1, 1, 2), max_value=datetime(9998, 12, 31), timezones=st.just(UTC)
)


def test_record_ids_are_canonical_uuid7_and_strictly_ordered() -> None:
    generated = [ids.new_record_id() for _ in range(2000)]
    assert all(ids.is_uuid7(value) for value in generated)
    assert generated == sorted(generated)
    assert len(set(generated)) == len(generated)


def test_uuid7_embeds_its_creation_time() -> None:
    before = datetime.now(UTC) - timedelta(seconds=1)
    embedded = ids.uuid7_datetime(ids.new_record_id())
    # uuid6 bumps the millisecond per id inside a burst (the ordering test makes 2000), hence the slack.
    assert before <= embedded <= datetime.now(UTC) + timedelta(seconds=5)


@given(st.uuids(version=4))
def test_other_uuid_versions_are_not_uuid7(value: uuid.UUID) -> None:
    assert not ids.is_uuid7(str(value))


@pytest.mark.parametrize("value", ["", "not-a-uuid", None, 7, "01A22A4A-14D2-7634-B9A4-DE5236A439BE"])
def test_is_uuid7_rejects_non_canonical_values(value: object) -> None:
    assert not ids.is_uuid7(value)


def test_uuid7_datetime_refuses_other_ids() -> None:
    with pytest.raises(UserInputError, match="UUID v7"):
        ids.uuid7_datetime(str(uuid.uuid4()))


@given(AWARE)
def test_timestamp_format_round_trips_at_second_precision(moment: datetime) -> None:
    text = ids.format_timestamp(moment)
    assert re.fullmatch(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z", text)
    assert ids.parse_timestamp(text) == moment.replace(microsecond=0)
    assert re.fullmatch(r"\d{8}T\d{6}Z", ids.file_stamp(text))
    assert ids.file_stamp(text) == ids.file_stamp(moment)


@given(AWARE, st.integers(min_value=-14 * 60, max_value=14 * 60))
def test_offsets_are_normalised_to_utc(moment: datetime, offset_minutes: int) -> None:
    local = moment.astimezone(timezone(timedelta(minutes=offset_minutes)))
    assert ids.format_timestamp(local) == ids.format_timestamp(moment)
    assert ids.parse_timestamp(local.isoformat()) == moment


def test_parse_accepts_fractions_and_rejects_garbage() -> None:
    assert ids.parse_timestamp("2026-01-02T03:04:05.678Z") == datetime(2026, 1, 2, 3, 4, 5, 678000, tzinfo=UTC)
    for bad in ["2026-01-02", "yesterday", "2026-01-02T03:04:05", "2026-13-02T03:04:05Z"]:
        with pytest.raises(UserInputError, match="RFC 3339|timezone"):
            ids.parse_timestamp(bad)


def test_naive_datetimes_are_refused() -> None:
    with pytest.raises(UserInputError, match="timezone"):
        ids.format_timestamp(datetime(2026, 1, 1))
    with pytest.raises(UserInputError, match="timezone"):
        ids.file_stamp(datetime(2026, 1, 1))


def test_now_timestamp_is_current() -> None:
    assert abs(ids.parse_timestamp(ids.now_timestamp()) - datetime.now(UTC)) < timedelta(seconds=2)


@given(
    st.sampled_from(ids.STRUCTURED_PREFIXES),
    st.lists(st.tuples(st.sampled_from(ids.STRUCTURED_PREFIXES), st.integers(1, 998)), max_size=30),
    st.lists(st.text(max_size=6), max_size=5),
)
def test_next_id_is_one_past_the_highest_of_its_prefix(
    prefix: str, used: list[tuple[str, int]], noise: list[str]
) -> None:
    existing = [f"{p}-{n:03d}" for p, n in used] + noise
    result = ids.next_id(prefix, existing)
    assert re.fullmatch(r"[DEOF]-\d{3}", result)
    assert result.startswith(prefix + "-")
    same_prefix = [n for p, n in used if p == prefix]
    assert int(result[2:]) == max(same_prefix, default=0) + 1
    assert result not in existing


def test_next_id_starts_at_one_and_refuses_bad_prefix_and_overflow() -> None:
    assert ids.next_id("F", []) == "F-001"
    with pytest.raises(UserInputError, match="one upper-case letter"):
        ids.next_id("DX", [])
    with pytest.raises(UserInputError, match="no free D-### id"):
        ids.next_id("D", ["D-999"])


def test_project_id_is_stable_and_path_free(tmp_path) -> None:
    first = ids.project_id(tmp_path)
    assert first == ids.project_id(tmp_path / "." )
    assert re.fullmatch(r"sha256:[0-9a-f]{64}", first)
    assert str(tmp_path) not in first
    assert first != ids.project_id(tmp_path / "other")


# ---- derived (content-addressed) record ids ----------------------------------------------------------

UUID7_TIMES = st.datetimes(min_value=datetime(1970, 1, 1), max_value=datetime.max,
                           timezones=st.just(UTC))


@given(st.binary(max_size=256), UUID7_TIMES)
def test_derived_ids_are_valid_uuid7_at_the_moments_millisecond(content: bytes, moment: datetime) -> None:
    derived = ids.derived_record_id(content, moment)
    assert ids.is_uuid7(derived)
    assert ids.uuid7_datetime(derived) == moment.replace(microsecond=moment.microsecond // 1000 * 1000)
    assert derived == ids.derived_record_id(content, moment)  # same input, same id


@given(st.binary(max_size=64), st.binary(max_size=64), UUID7_TIMES)
def test_different_content_gives_a_different_id(first: bytes, second: bytes, moment: datetime) -> None:
    assume(first != second)
    assert ids.derived_record_id(first, moment) != ids.derived_record_id(second, moment)


@given(st.binary(max_size=64), UUID7_TIMES, UUID7_TIMES)
def test_derived_ids_sort_by_millisecond(content: bytes, earlier: datetime, later: datetime) -> None:
    earlier, later = sorted((earlier, later))
    assume(later - earlier >= timedelta(milliseconds=1))
    assert ids.derived_record_id(content, earlier) < ids.derived_record_id(content, later)


def test_derived_ids_spread_over_all_74_random_bits() -> None:
    moment = datetime(2026, 1, 1, tzinfo=UTC)
    values = [uuid.UUID(ids.derived_record_id(str(n).encode(), moment)).int for n in range(512)]
    rand_a = {(v >> 64) & 0xFFF for v in values}
    rand_b = {v & ((1 << 62) - 1) for v in values}
    assert len(rand_a) > 400 and len(rand_b) == 512  # 12 + 62 bits both vary (a fixed field would not)
    assert all(v >> 80 == 1767225600000 for v in values)


@pytest.mark.parametrize("moment", [datetime(2026, 1, 1), datetime(1969, 12, 31, 23, 59, tzinfo=UTC)])
def test_derived_ids_refuse_naive_or_pre_epoch_moments(moment: datetime) -> None:
    with pytest.raises(UserInputError, match="timezone|time range"):
        ids.derived_record_id(b"content", moment)


def test_derived_ids_refuse_text_content() -> None:
    with pytest.raises(UserInputError, match="canonical bytes"):
        ids.derived_record_id("text", datetime(2026, 1, 1, tzinfo=UTC))  # type: ignore[arg-type]

"""The one number and time format module (fabricsuite.base.formats): each format as documented, from
a Unix time, a datetime (aware or naive, read as UTC) or now."""

from datetime import UTC, datetime, timedelta, timezone

from fabricsuite.base.formats import backup_utc, figure, file_utc, iso_utc, shown_utc

#: 2026-12-03 10:11:40 UTC
T = datetime(2026, 12, 3, 10, 11, 40, tzinfo=UTC).timestamp()


def test_each_time_format_from_a_unix_time():
    assert iso_utc(T) == "2026-12-03T10:11:40Z"
    assert file_utc(T) == "20261203T101140Z"
    assert backup_utc(T) == "2026-12-03T101140Z"
    assert shown_utc(T) == "2026-12-03 10:11Z"
    assert shown_utc(T, seconds=True) == "2026-12-03 10:11:40Z"


def test_a_datetime_in_another_zone_is_written_in_utc_and_a_naive_one_is_read_as_utc():
    east = datetime(2026, 12, 3, 12, 11, 40, tzinfo=timezone(timedelta(hours=2)))
    assert iso_utc(east) == "2026-12-03T10:11:40Z"
    assert iso_utc(datetime(2026, 12, 3, 10, 11, 40)) == "2026-12-03T10:11:40Z"


def test_now_is_the_default_and_sorts_by_time_in_a_file_name():
    before = file_utc(T)
    now = file_utc()
    assert now > before and len(now) == len(before) and now.endswith("Z")
    assert datetime.strptime(iso_utc(), "%Y-%m-%dT%H:%M:%SZ").year >= 2026


def test_a_figure_has_four_significant_digits_and_says_what_is_not_a_number():
    assert figure(11144.37) == "1.114e+04"
    assert figure(0.1637) == "0.1637"
    assert figure(3) == "3"
    assert figure(None) == "-"
    assert figure(float("nan")) == "nan"
    assert figure("n/a") == "n/a"
    assert figure(True) == "True"

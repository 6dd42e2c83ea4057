//! Tests of the table printers' helpers.

use super::human_duration;

#[test]
fn ages_read_as_the_real_printers() {
    let cases = [
        (0, "0s"),
        (119, "119s"),
        (120, "2m"),
        (125, "2m5s"),
        (600, "10m"),
        (3 * 3600, "3h"),
        (3 * 3600 + 60, "3h1m"),
        (47 * 3600, "47h"),
        (50 * 3600, "2d2h"),
        (10 * 86400, "10d"),
        (3 * 365 * 86400 + 86400, "3y1d"),
        (9 * 365 * 86400, "9y"),
    ];
    for (seconds, want) in cases {
        assert_eq!(human_duration(seconds), want, "{seconds}");
    }
}

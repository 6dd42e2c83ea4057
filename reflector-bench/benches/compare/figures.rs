//! Figures over runs: a JSON field, the median, and how the tables print them.

use serde_json::Value;

/// The number `key` of a child's JSON line.
pub fn num(v: &Value, key: &str) -> Option<f64> {
    v.get(key)?.as_f64()
}

/// The median of the finite `xs`.
pub fn median(mut xs: Vec<f64>) -> Option<f64> {
    xs.retain(|x| x.is_finite());
    if xs.is_empty() {
        return None;
    }
    xs.sort_by(f64::total_cmp);
    let mid = xs.len() / 2;
    Some(if xs.len() % 2 == 1 {
        xs[mid]
    } else {
        (xs[mid - 1] + xs[mid]) / 2.0
    })
}

/// `x` with `digits` decimals, or a dash.
pub fn fmt(x: Option<f64>, digits: usize) -> String {
    x.map_or_else(|| "–".to_owned(), |x| format!("{x:.digits$}"))
}

/// `a / b` as a ratio, or a dash.
pub fn ratio(a: Option<f64>, b: Option<f64>) -> String {
    match (a, b) {
        (Some(a), Some(b)) if b > 0.0 => format!("{:.2}×", a / b),
        _ => "–".to_owned(),
    }
}

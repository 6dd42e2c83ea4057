//! [`Denial`]: why a hook refuses an object, as the API server reports it.

use std::fmt;

/// A refusal from a [`Validator`](super::Validator) or a
/// [`Convertible`](super::Convertible) conversion: a message for the user and an
/// HTTP status code, returned in the review's `Status`.
///
/// The API server shows the message to the client (`kubectl` prints it after
/// `admission webhook "…" denied the request:`). The code defaults to 403
/// (`Forbidden`), as controller-runtime's `admission.Denied`; 422 (`Invalid`) for a
/// field that does not validate reads as the API server's own validation errors.
///
/// # Example
/// ```
/// use reflector::webhooks::Denial;
/// let denial = Denial::new("replicas must be at most 10").code(422);
/// assert_eq!(denial.message(), "replicas must be at most 10");
/// assert_eq!(denial.status_code(), 422);
/// // `?` and `.into()` turn a message into a 403 denial.
/// let from_str: Denial = "no".into();
/// assert_eq!(from_str.status_code(), 403);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[must_use]
pub struct Denial {
    message: String,
    code: u16,
}

impl Denial {
    /// A denial with `message` and code 403.
    pub fn new(message: impl Into<String>) -> Self {
        Denial {
            message: message.into(),
            code: 403,
        }
    }

    /// The HTTP status code reported (400–599). Default 403. A code outside that
    /// range is reported as 403: a denial is always an error to the API server.
    pub fn code(mut self, code: u16) -> Self {
        self.code = if (400..600).contains(&code) {
            code
        } else {
            403
        };
        self
    }

    /// The message.
    #[must_use]
    pub fn message(&self) -> &str {
        &self.message
    }

    /// The HTTP status code.
    #[must_use]
    pub fn status_code(&self) -> u16 {
        self.code
    }

    /// The `Status` reason the API server's own errors use for this code.
    pub(crate) fn reason(&self) -> &'static str {
        match self.code {
            400 => "BadRequest",
            401 => "Unauthorized",
            404 => "NotFound",
            409 => "Conflict",
            422 => "Invalid",
            429 => "TooManyRequests",
            500..=599 => "InternalError",
            _ => "Forbidden",
        }
    }
}

impl fmt::Display for Denial {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({})", self.message, self.code)
    }
}

impl std::error::Error for Denial {}

impl From<String> for Denial {
    fn from(message: String) -> Self {
        Denial::new(message)
    }
}

impl From<&str> for Denial {
    fn from(message: &str) -> Self {
        Denial::new(message)
    }
}

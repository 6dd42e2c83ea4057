//! [`Ctxt`]: collects every error found while parsing and validating, as serde's.

use std::cell::RefCell;
use std::fmt::Display;

use quote::ToTokens;

/// Error collector threaded through parsing and validation.
#[derive(Default)]
pub struct Ctxt {
    /// The errors so far, in the order found.
    errors: RefCell<Vec<syn::Error>>,
}

impl Ctxt {
    /// An empty collector.
    pub fn new() -> Self {
        Ctxt::default()
    }

    /// Records an error spanned at `obj`'s tokens.
    pub fn error_spanned_by<T: ToTokens, M: Display>(&self, obj: T, msg: M) {
        self.errors
            .borrow_mut()
            .push(syn::Error::new_spanned(obj.into_token_stream(), msg));
    }

    /// Records an error at `span`.
    pub fn error_at<M: Display>(&self, span: proc_macro2::Span, msg: M) {
        self.errors.borrow_mut().push(syn::Error::new(span, msg));
    }

    /// Records a parse error.
    pub fn syn_error(&self, err: syn::Error) {
        self.errors.borrow_mut().push(err);
    }

    /// Every error recorded, combined into one (empty: none).
    pub fn finish(self) -> Option<syn::Error> {
        let mut all = self.errors.into_inner().into_iter();
        let mut first = all.next()?;
        for e in all {
            first.combine(e);
        }
        Some(first)
    }
}

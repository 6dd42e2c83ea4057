//! The in-order FIFO's tests: client-go's `the_real_fifo_test.go` ported test by
//! test with the same expected sequences (`real_fifo.rs`; the name of each starts
//! with `in_order_`), and the consumer's watermark (`watermark.rs`).

mod real_fifo;
mod watermark;

//! The standalone binary: it prints its URL, serves, and on SIGTERM ends open watches
//! cleanly (the chunked body's final chunk) and exits 0.
#![cfg(unix)]

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};

const GUARD: Duration = Duration::from_secs(20);

/// The running binary; killed if the test ends early.
struct Running(std::process::Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[tokio::test]
async fn sigterm_ends_watches_cleanly_and_exits_zero() {
    let mut child = Running(
        Command::new(env!("CARGO_BIN_EXE_reflector-testkit"))
            .arg("--demo")
            .env("RUST_LOG", "warn")
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    // Kept open to the end, so the binary never writes into a closed pipe.
    let mut stdout = BufReader::new(child.0.stdout.take().unwrap());
    let mut url = String::new();
    while !url.starts_with("http://") {
        url.clear();
        assert_ne!(stdout.read_line(&mut url).unwrap(), 0, "no URL printed");
    }
    let addr = url.trim().trim_start_matches("http://").to_owned();

    let mut stream = tokio::net::TcpStream::connect(&addr).await.unwrap();
    let request =
        "GET /api/v1/namespaces/demo/configmaps?watch=true HTTP/1.1\r\nHost: localhost\r\n\r\n";
    stream.write_all(request.as_bytes()).await.unwrap();
    // Read until the three demo ConfigMaps have arrived, so the watch is surely open.
    let mut seen = Vec::new();
    let mut buf = [0u8; 4096];
    while String::from_utf8_lossy(&seen).matches("\"ADDED\"").count() < 3 {
        let n = tokio::time::timeout(GUARD, stream.read(&mut buf))
            .await
            .expect("events arrive")
            .unwrap();
        assert_ne!(n, 0, "closed early: {}", String::from_utf8_lossy(&seen));
        seen.extend_from_slice(&buf[..n]);
    }

    let pid = child.0.id().to_string();
    let status = Command::new("kill").args(["-TERM", &pid]).status().unwrap();
    assert!(status.success());
    // The watch ends with the terminating zero-length chunk, then the connection closes.
    tokio::time::timeout(GUARD, stream.read_to_end(&mut seen))
        .await
        .expect("the watch ends")
        .unwrap();
    let text = String::from_utf8_lossy(&seen);
    assert!(text.starts_with("HTTP/1.1 200"), "{text}");
    assert!(text.contains("transfer-encoding: chunked"), "{text}");
    assert!(text.ends_with("\r\n0\r\n\r\n"), "no final chunk: {text:?}");
    let deadline = tokio::time::Instant::now() + GUARD;
    let exit = loop {
        if let Some(exit) = child.0.try_wait().unwrap() {
            break exit;
        }
        assert!(tokio::time::Instant::now() < deadline, "still running");
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    assert_eq!(exit.code(), Some(0), "{exit:?}");
    drop(stdout);
}

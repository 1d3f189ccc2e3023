//! Server-Sent-Events framing of a streamed answer (SPEC M1): bytes in, `data:` payloads out.

/// Incremental Server-Sent-Events parser: bytes in, `data:` payloads out (one per event,
/// multi-line data joined with `\n`). Handles `\n`, `\r\n` and chunk boundaries anywhere.
#[derive(Debug, Default)]
pub struct SseParser {
    buf: Vec<u8>,
    data: Vec<String>,
}

impl SseParser {
    /// Feeds bytes; returns the payloads of the events completed by them.
    pub fn push(&mut self, bytes: &[u8]) -> Vec<String> {
        self.buf.extend_from_slice(bytes);
        let mut out = Vec::new();
        while let Some(nl) = self.buf.iter().position(|&b| b == b'\n') {
            let mut line: Vec<u8> = self.buf.drain(..=nl).collect();
            line.pop();
            if line.last() == Some(&b'\r') {
                line.pop();
            }
            self.line(&String::from_utf8_lossy(&line), &mut out);
        }
        out
    }

    /// Flushes a final event not terminated by a blank line.
    pub fn finish(&mut self) -> Vec<String> {
        let mut out = Vec::new();
        if !self.buf.is_empty() {
            let rest = String::from_utf8_lossy(&std::mem::take(&mut self.buf)).to_string();
            self.line(rest.trim_end_matches('\r'), &mut out);
        }
        self.line("", &mut out);
        out
    }

    fn line(&mut self, line: &str, out: &mut Vec<String>) {
        if line.is_empty() {
            if !self.data.is_empty() {
                out.push(self.data.join("\n"));
                self.data.clear();
            }
        } else if let Some(rest) = line.strip_prefix("data:") {
            self.data
                .push(rest.strip_prefix(' ').unwrap_or(rest).to_string());
        }
        // `event:`, `id:`, `retry:` and `:` comments are ignored.
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sse_parser_handles_split_chunks_and_crlf() {
        let mut p = SseParser::default();
        let mut out = p.push(b"data: {\"a\":1}\r\n\r\ndata: par");
        out.extend(p.push(b"t1\ndata: part2\n\n: comment\nevent: x\ndata: [DONE]"));
        out.extend(p.finish());
        assert_eq!(out, vec!["{\"a\":1}", "part1\npart2", "[DONE]"]);
    }
}

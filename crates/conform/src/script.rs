//! A packetdrill script as its parts: command-line options written at its top
//! (`--tolerance_usecs=20000`), then timed events — a shell command (`` `…` ``), a system call
//! on the socket under test, a TCP segment, or a Python block (`%{ … }%`) — each with the line it
//! starts on. Comments (`//`, `/* */`) are dropped.

use crate::packet::{self, Segment};
use crate::ParseError;

/// When an event happens.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Time {
    /// `T`: seconds from the start of the script.
    Absolute(f64),
    /// `+T`: seconds after the previous event.
    Relative(f64),
    /// `T1~T2`, `+T1~+T2`: any time in the range (relative when `relative`).
    Range {
        /// Earliest.
        from: f64,
        /// Latest.
        to: f64,
        /// Whether both ends are relative to the previous event.
        relative: bool,
    },
    /// `*`: any time.
    Any,
}

/// What an event does.
#[derive(Debug, Clone, PartialEq)]
pub enum Action {
    /// A shell command, run when the script reaches it.
    Shell(String),
    /// A system call on the socket under test: its name, its arguments as written and what
    /// the script expects it to return (`= 0`, `= -1 EAGAIN (…)`), also as written.
    Syscall {
        /// `write`, `setsockopt`, ….
        name: String,
        /// `T...E`: the call blocks and returns `E` seconds after it started.
        returns_after: Option<f64>,
        /// The text between the parentheses.
        args: String,
        /// The text after `=`.
        result: String,
    },
    /// A segment injected or expected.
    Segment(Segment),
    /// A Python block, run against the socket's `tcp_info` (`assert tcpi_snd_cwnd == 7`).
    Python(String),
}

/// One event.
#[derive(Debug, Clone, PartialEq)]
pub struct Event {
    /// Line it starts on (1-based).
    pub line: usize,
    /// When.
    pub time: Time,
    /// What.
    pub action: Action,
}

/// A whole script.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Script {
    /// Options at the top, `--name=value` (value empty for a bare flag).
    pub options: Vec<(String, String)>,
    /// Its events, in order.
    pub events: Vec<Event>,
}

impl Script {
    /// Reads a script.
    pub fn parse(text: &str) -> Result<Script, ParseError> {
        let mut r = Reader { text: &strip_comments(text), at: 0 };
        let mut script = Script::default();
        loop {
            r.skip_space();
            let line = r.line();
            match r.peek() {
                None => return Ok(script),
                Some('-') if r.rest().starts_with("--") && script.events.is_empty() => {
                    let opt = r.take_line().trim_start_matches('-').to_string();
                    let (name, value) = opt.split_once('=').unwrap_or((&opt, ""));
                    script.options.push((name.trim().to_string(), value.trim().to_string()));
                }
                // A shell command before the first timed event: the script's set-up.
                Some('`') => {
                    let action = Action::Shell(r.delimited("`", "`", line)?);
                    script.events.push(Event { line, time: Time::Relative(0.0), action });
                }
                Some(_) => {
                    let (time, returns_after) = r.time().map_err(|what| ParseError { line, what })?;
                    let mut action = r.action(line)?;
                    match (&mut action, returns_after) {
                        (Action::Syscall { returns_after: r, .. }, end) => *r = end,
                        (_, Some(_)) => {
                            return Err(ParseError { line, what: "only a system call has an end time (...T)".into() })
                        }
                        (_, None) => {}
                    }
                    script.events.push(Event { line, time, action });
                }
            }
        }
    }
}

/// The text with comments replaced by spaces (newlines kept, so lines keep their numbers).
/// Comment markers inside backquoted shell commands and Python blocks are kept.
fn strip_comments(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    let mut quoted: Option<&str> = None;
    while let Some(c) = chars.next() {
        match (quoted, c, chars.peek().copied()) {
            (None, '`', _) => quoted = Some("`"),
            (Some("`"), '`', _) => quoted = None,
            (None, '%', Some('{')) => quoted = Some("%{"),
            (Some("%{"), '}', Some('%')) => quoted = None,
            (None, '/', Some('/')) => {
                while chars.peek().is_some_and(|&n| n != '\n') {
                    chars.next();
                }
                continue;
            }
            (None, '/', Some('*')) => {
                chars.next();
                let mut last = ' ';
                for n in chars.by_ref() {
                    out.push(if n == '\n' { '\n' } else { ' ' });
                    if last == '*' && n == '/' {
                        break;
                    }
                    last = n;
                }
                continue;
            }
            _ => {}
        }
        out.push(c);
    }
    out
}

struct Reader<'a> {
    text: &'a str,
    at: usize,
}

impl<'a> Reader<'a> {
    fn rest(&self) -> &'a str {
        &self.text[self.at..]
    }

    fn peek(&self) -> Option<char> {
        self.rest().chars().next()
    }

    /// 1-based line of the current position.
    fn line(&self) -> usize {
        self.text[..self.at].matches('\n').count() + 1
    }

    fn skip_space(&mut self) {
        let rest = self.rest();
        self.at += rest.len() - rest.trim_start().len();
    }

    fn take_line(&mut self) -> &'a str {
        let rest = &self.text[self.at..];
        let end = rest.find('\n').unwrap_or(rest.len());
        self.at += end;
        &rest[..end]
    }

    /// The text between `open` and the next `close`, both consumed.
    fn delimited(&mut self, open: &str, close: &str, line: usize) -> Result<String, ParseError> {
        let rest = &self.text[self.at..];
        let body = rest.strip_prefix(open).ok_or_else(|| ParseError { line, what: format!("expected {open}") })?;
        let end =
            body.find(close).ok_or_else(|| ParseError { line, what: format!("{open} is never closed by {close}") })?;
        self.at += open.len() + end + close.len();
        Ok(body[..end].trim().to_string())
    }

    /// `T`, `+T`, `*`, `T~T`, `+T~+T`, and a blocking call's end, `T...E`.
    fn time(&mut self) -> Result<(Time, Option<f64>), String> {
        let rest = self.rest();
        let word = rest.split_whitespace().next().unwrap_or_default();
        self.at += word.len();
        let seconds = |s: &str| s.parse::<f64>().map_err(|_| format!("`{word}` is not a time"));
        let (word, end) = match word.split_once("...") {
            Some((start, end)) => (start, Some(seconds(end)?)),
            None => (word, None),
        };
        Ok((Self::start_time(word, seconds)?, end))
    }

    /// The start of an event's time, as [`Reader::time`] reads it.
    fn start_time(word: &str, seconds: impl Fn(&str) -> Result<f64, String>) -> Result<Time, String> {
        if word == "*" {
            return Ok(Time::Any);
        }
        if let Some((from, to)) = word.split_once('~') {
            let relative = from.starts_with('+');
            if relative != to.starts_with('+') {
                return Err(format!("`{word}`: both ends of a range are relative (+) or neither is"));
            }
            let (from, to) = (seconds(from.trim_start_matches('+'))?, seconds(to.trim_start_matches('+'))?);
            return Ok(Time::Range { from, to, relative });
        }
        match word.strip_prefix('+') {
            Some(t) => Ok(Time::Relative(seconds(t)?)),
            None => Ok(Time::Absolute(seconds(word)?)),
        }
    }

    /// What follows an event's time.
    fn action(&mut self, line: usize) -> Result<Action, ParseError> {
        self.skip_space();
        let err = |what: String| ParseError { line, what };
        match self.peek() {
            Some('`') => Ok(Action::Shell(self.delimited("`", "`", line)?)),
            Some('%') => Ok(Action::Python(self.delimited("%{", "}%", line)?)),
            Some('<' | '>') => packet::parse(self.take_line()).map(Action::Segment).map_err(err),
            Some(_) => self.syscall().map_err(err),
            None => Err(err("an event time with nothing after it".into())),
        }
    }

    /// `name(args) = result`, the arguments possibly over several lines.
    fn syscall(&mut self) -> Result<Action, String> {
        let rest = self.rest();
        let open = rest
            .find('(')
            .ok_or_else(|| format!("`{}`: expected a system call name(args) = result", first_line(rest)))?;
        let name = rest[..open].trim();
        if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            return Err(format!("`{}`: expected a system call name(args) = result", first_line(rest)));
        }
        let mut depth = 0;
        let close = rest[open..]
            .char_indices()
            .find(|&(_, c)| {
                depth += match c {
                    '(' | '[' | '{' => 1,
                    ')' | ']' | '}' => -1,
                    _ => 0,
                };
                depth == 0
            })
            .map(|(i, _)| open + i)
            .ok_or_else(|| format!("`{name}(`: the arguments are never closed"))?;
        let args = rest[open + 1..close].trim().to_string();
        let after = &rest[close + 1..];
        let end = after.find('\n').unwrap_or(after.len());
        let result = after[..end].trim().strip_prefix('=').ok_or_else(|| format!("`{name}(…)`: expected = result"))?;
        let action =
            Action::Syscall { name: name.to_string(), returns_after: None, args, result: result.trim().to_string() };
        self.at += close + 1 + end;
        Ok(action)
    }
}

fn first_line(s: &str) -> &str {
    s.lines().next().unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    const SCRIPT: &str = r#"// A test.
--tolerance_usecs=20000
`../common/defaults.sh`

    0 socket(..., SOCK_STREAM, IPPROTO_TCP) = 3
   +0 setsockopt(3, SOL_SOCKET, SO_REUSEADDR, [1], 4) = 0  /* reuse */
  +.1 < S 0:0(0) win 32792 <mss 1000,sackOK,nop,nop,nop,wscale 7>
   +0 > S. 0:0(0) ack 1 <mss 1460,nop,nop,sackOK,nop,wscale 8>
 +.01 %{
assert tcpi_ca_state == TCP_CA_Recovery, tcpi_ca_state // not a comment here
}%
0.2~0.25 > P. 1:10001(10000) ack 1
    * > F. 10001:10001(0) ack 1
   +0 `sysctl -q net.ipv4.tcp_recovery=1
sysctl -q net.ipv4.tcp_early_retrans=3`
+.1...0.2 connect(3, ..., ...) = 0
"#;

    #[test]
    fn every_kind_of_event_with_its_line() {
        let s = Script::parse(SCRIPT).unwrap();
        assert_eq!(s.options, [("tolerance_usecs".to_string(), "20000".to_string())]);
        let lines: Vec<usize> = s.events.iter().map(|e| e.line).collect();
        assert_eq!(lines, [3, 5, 6, 7, 8, 9, 12, 13, 14, 16]);
        assert_eq!(s.events[0].action, Action::Shell("../common/defaults.sh".into()));
        assert_eq!(
            s.events[2].action,
            Action::Syscall {
                name: "setsockopt".into(),
                returns_after: None,
                args: "3, SOL_SOCKET, SO_REUSEADDR, [1], 4".into(),
                result: "0".into()
            }
        );
        assert_eq!(s.events[3].time, Time::Relative(0.1));
        assert!(matches!(&s.events[5].action, Action::Python(p) if p.contains("// not a comment here")));
        assert_eq!(s.events[6].time, Time::Range { from: 0.2, to: 0.25, relative: false });
        assert_eq!(s.events[7].time, Time::Any);
        assert!(matches!(&s.events[8].action, Action::Shell(c) if c.ends_with("tcp_early_retrans=3")));
        assert_eq!(s.events[9].time, Time::Relative(0.1));
        assert!(matches!(s.events[9].action, Action::Syscall { returns_after: Some(t), .. } if t == 0.2));
    }

    #[test]
    fn errors_name_the_line() {
        let e = Script::parse("0 socket(..., SOCK_STREAM\n+0 < . 1:1(0) ack 1\n").unwrap_err();
        assert_eq!(e.line, 1, "{e}");
        let e = Script::parse("0 socket() = 3\n+x write(4, ..., 1) = 1\n").unwrap_err();
        assert_eq!((e.line, e.what.as_str()), (2, "`+x` is not a time"));
        let e = Script::parse("0 socket() = 3\n+0 > Q 0:0(0)\n").unwrap_err();
        assert!(e.line == 2 && e.what.contains("expected S F R P"), "{e}");
        assert!(Script::parse("+0 %{ assert 1\n").unwrap_err().what.contains("never closed"));
    }
}

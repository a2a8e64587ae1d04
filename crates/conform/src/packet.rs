//! A TCP segment line of a packetdrill script, after its time: a direction (`<` injected into
//! the socket under test, `>` expected from it), an optional ECN codepoint (`[ect0]`), the
//! flags, the sequence range, and the optional ACK, window, urgent pointer and options.

/// Which way the segment goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    /// `<`: the script injects it.
    Inbound,
    /// `>`: the socket under test must send it.
    Outbound,
}

/// The ECN field of the IP header (`[noecn]`, `[ect0]`, `[ect1]`, `[ce]`, `[ect01]`: either ECT).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ecn {
    /// Not ECN-capable.
    NotEct,
    /// ECT(0).
    Ect0,
    /// ECT(1).
    Ect1,
    /// Either ECT codepoint.
    Ect01,
    /// Congestion experienced.
    Ce,
}

/// TCP flags; `.` is ACK.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Flags {
    /// S.
    pub syn: bool,
    /// F.
    pub fin: bool,
    /// R.
    pub rst: bool,
    /// P.
    pub psh: bool,
    /// `.`.
    pub ack: bool,
    /// E: ECN echo.
    pub ece: bool,
    /// W: congestion window reduced.
    pub cwr: bool,
    /// U.
    pub urg: bool,
}

/// One TCP option as written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TcpOption {
    /// `nop`.
    Nop,
    /// `eol`.
    Eol,
    /// `mss N`.
    Mss(u16),
    /// `wscale N`.
    WindowScale(u8),
    /// `sackOK`.
    SackPermitted,
    /// `sack a:b c:d …`: SACK blocks, relative sequence numbers.
    Sack(Vec<(u32, u32)>),
    /// `TS val V ecr E`.
    Timestamp {
        /// TSval.
        val: u32,
        /// TSecr.
        ecr: u32,
    },
    /// Another option (Fast Open, MD5, experimental), as written: read, not interpreted.
    Other(String),
}

/// The options of a segment line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Options {
    /// None written.
    Unspecified,
    /// `<...>`: whatever the segment carries.
    Any,
    /// These, in order.
    List(Vec<TcpOption>),
}

/// A TCP segment line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Segment {
    /// Injected or expected.
    pub direction: Direction,
    /// The IP header's ECN field, if the line gives it.
    pub ecn: Option<Ecn>,
    /// Its flags.
    pub flags: Flags,
    /// First sequence number (relative to the initial one).
    pub start: u32,
    /// Sequence number after its payload.
    pub end: u32,
    /// Payload bytes.
    pub len: u32,
    /// The acknowledgement number, if the line gives one.
    pub ack: Option<u32>,
    /// The window field, if given.
    pub win: Option<u32>,
    /// The urgent pointer, if given.
    pub urg: Option<u32>,
    /// Its options.
    pub options: Options,
}

/// Parses a segment line from its direction on (`< . 1:1(0) ack 1001 win 257`).
pub fn parse(text: &str) -> Result<Segment, String> {
    let text = text.trim();
    let (direction, rest) = match text.as_bytes().first() {
        Some(b'<') => (Direction::Inbound, &text[1..]),
        Some(b'>') => (Direction::Outbound, &text[1..]),
        _ => return Err(format!("`{text}`: a segment starts with < or >")),
    };
    let (head, options) = match rest.find('<') {
        Some(i) => (&rest[..i], Some(&rest[i..])),
        None => (rest, None),
    };
    let mut words = head.split_whitespace().peekable();
    let ecn = match words.peek() {
        Some(w) if w.starts_with('[') => Some(ecn(words.next().unwrap_or_default())?),
        _ => None,
    };
    let flags = flags(words.next().ok_or("no flags")?)?;
    let (start, end, len) = range(words.next().ok_or("no sequence range (start:end(len))")?)?;
    let mut seg = Segment {
        direction,
        ecn,
        flags,
        start,
        end,
        len,
        ack: None,
        win: None,
        urg: None,
        options: Options::Unspecified,
    };
    while let Some(field) = words.next() {
        let value = words.next().ok_or_else(|| format!("`{field}` without a value"))?;
        let n = number(value)?;
        match field {
            "ack" => seg.ack = Some(n),
            "win" => seg.win = Some(n),
            "urg" => seg.urg = Some(n),
            other => return Err(format!("`{other}`: expected ack, win, urg or <options>")),
        }
    }
    if let Some(o) = options {
        seg.options = parse_options(o)?;
    }
    Ok(seg)
}

fn number(w: &str) -> Result<u32, String> {
    w.parse().map_err(|_| format!("`{w}` is not a number"))
}

fn ecn(w: &str) -> Result<Ecn, String> {
    Ok(match w {
        "[noecn]" => Ecn::NotEct,
        "[ect0]" => Ecn::Ect0,
        "[ect1]" => Ecn::Ect1,
        "[ect01]" => Ecn::Ect01,
        "[ce]" => Ecn::Ce,
        other => return Err(format!("`{other}`: expected [noecn], [ect0], [ect1], [ect01] or [ce]")),
    })
}

fn flags(w: &str) -> Result<Flags, String> {
    let mut f = Flags::default();
    if w == "-" {
        return Ok(f);
    }
    for c in w.chars() {
        let flag = match c {
            'S' => &mut f.syn,
            'F' => &mut f.fin,
            'R' => &mut f.rst,
            'P' => &mut f.psh,
            '.' => &mut f.ack,
            'E' => &mut f.ece,
            'W' => &mut f.cwr,
            'U' => &mut f.urg,
            other => return Err(format!("`{other}` in flags `{w}`: expected S F R P . E W U or -")),
        };
        *flag = true;
    }
    Ok(f)
}

/// `start:end(len)`.
fn range(w: &str) -> Result<(u32, u32, u32), String> {
    let bad = || format!("`{w}`: expected start:end(len)");
    let (start, rest) = w.split_once(':').ok_or_else(bad)?;
    let (end, len) = rest.strip_suffix(')').and_then(|r| r.split_once('(')).ok_or_else(bad)?;
    let (start, end, len) = (number(start)?, number(end)?, number(len)?);
    if end.wrapping_sub(start) != len {
        return Err(format!("`{w}`: end - start is not len"));
    }
    Ok((start, end, len))
}

/// `<mss 1000,sackOK,nop,nop,nop,wscale 7>` or `<...>`.
fn parse_options(text: &str) -> Result<Options, String> {
    let inner = text
        .trim()
        .strip_prefix('<')
        .and_then(|t| t.strip_suffix('>'))
        .ok_or_else(|| format!("`{text}`: options are <...>"))?;
    if inner.trim() == "..." {
        return Ok(Options::Any);
    }
    inner.split(',').map(|o| option(o.trim())).collect::<Result<_, _>>().map(Options::List)
}

fn option(o: &str) -> Result<TcpOption, String> {
    let mut w = o.split_whitespace();
    let name = w.next().ok_or("an empty option")?;
    let args: Vec<&str> = w.collect();
    let one = |what: &str| -> Result<u32, String> {
        match args[..] {
            [v] => number(v),
            _ => Err(format!("`{o}`: {what} takes one number")),
        }
    };
    Ok(match name {
        "nop" => TcpOption::Nop,
        "eol" => TcpOption::Eol,
        "sackOK" => TcpOption::SackPermitted,
        "mss" => TcpOption::Mss(u16::try_from(one("mss")?).map_err(|_| format!("`{o}`: mss above 65535"))?),
        "wscale" => {
            TcpOption::WindowScale(u8::try_from(one("wscale")?).map_err(|_| format!("`{o}`: wscale above 255"))?)
        }
        "sack" => TcpOption::Sack(args.iter().map(|b| sack_block(b)).collect::<Result<_, _>>()?),
        "TS" => match args[..] {
            ["val", v, "ecr", e] => TcpOption::Timestamp { val: number(v)?, ecr: number(e)? },
            _ => return Err(format!("`{o}`: expected TS val N ecr N")),
        },
        _ => TcpOption::Other(o.to_string()),
    })
}

fn sack_block(b: &str) -> Result<(u32, u32), String> {
    let (l, r) = b.split_once(':').ok_or_else(|| format!("`{b}`: a SACK block is start:end"))?;
    Ok((number(l)?, number(r)?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_syn_with_options() {
        let s = parse("< S 0:0(0) win 32792 <mss 1000,sackOK,nop,nop,nop,wscale 7>").unwrap();
        assert_eq!(s.direction, Direction::Inbound);
        assert!(s.flags.syn && !s.flags.ack);
        assert_eq!((s.start, s.end, s.len, s.ack, s.win), (0, 0, 0, None, Some(32792)));
        let o = [TcpOption::Mss(1000), TcpOption::SackPermitted, TcpOption::Nop, TcpOption::Nop, TcpOption::Nop];
        assert_eq!(s.options, Options::List([&o[..], &[TcpOption::WindowScale(7)]].concat()));
    }

    #[test]
    fn data_acks_sacks_and_ecn() {
        let s = parse("> P. 1:10001(10000) ack 1").unwrap();
        assert!(s.flags.psh && s.flags.ack && s.direction == Direction::Outbound);
        assert_eq!((s.len, s.ack, s.options), (10000, Some(1), Options::Unspecified));
        let s = parse("< . 1:1(0) ack 1 win 320 <sack 1001:2001 3001:4001,nop,nop>").unwrap();
        assert_eq!(
            s.options,
            Options::List(vec![TcpOption::Sack(vec![(1001, 2001), (3001, 4001)]), TcpOption::Nop, TcpOption::Nop])
        );
        let s = parse("< [ect1] SEW 0:0(0) win 32792 <...>").unwrap();
        assert_eq!((s.ecn, s.flags.ece, s.flags.cwr, s.options), (Some(Ecn::Ect1), true, true, Options::Any));
        let s = parse("> . 1:1(0) ack 1 <nop,nop,TS val 100 ecr 700>").unwrap();
        assert_eq!(
            s.options,
            Options::List(vec![TcpOption::Nop, TcpOption::Nop, TcpOption::Timestamp { val: 100, ecr: 700 }])
        );
    }

    #[test]
    fn a_bad_line_says_what_was_expected() {
        assert!(parse("> P. 1:10(10000) ack 1").unwrap_err().contains("end - start is not len"));
        assert!(parse("> X 0:0(0)").unwrap_err().contains("expected S F R P"));
        assert!(parse("> . 0:0(0) ack").unwrap_err().contains("without a value"));
        assert!(parse("> . 0:0(0) foo 3").unwrap_err().contains("expected ack, win, urg"));
        assert!(parse("> . 0:0(0) <mss>").unwrap_err().contains("mss takes one number"));
    }
}

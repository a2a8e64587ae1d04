//! `%{ assert … }%` lines against the model's `tcp_info`: comparisons (`==`, `!=`, `<`, `<=`,
//! `>`, `>=`, chained as in Python) of `tcpi_*` fields, numbers and `TCP_CA_*` names.

use super::{fail, unsupported, Outcome, Runner};
use daqnet_sim::tcp::CaState;

const OPERATORS: [&str; 6] = ["==", "!=", "<=", ">=", "<", ">"];

impl Runner {
    /// `assert` lines; `print` lines are read and ignored.
    pub(super) fn python(&mut self, line: usize, code: &str) -> Result<(), Outcome> {
        for stmt in code.lines().map(str::trim).filter(|l| !l.is_empty() && !l.starts_with('#')) {
            if stmt.starts_with("print") {
                continue;
            }
            let Some(cond) = stmt.strip_prefix("assert ") else {
                // `NAME = number`: a constant the assertions use.
                let value = stmt.split_once('=').filter(|(n, _)| is_name(n.trim())).and_then(|(_, v)| number(v.trim()));
                let (Some(v), Some((name, _))) = (value, stmt.split_once('=')) else {
                    return Err(unsupported(format!("line {line}: the Python `{stmt}`")));
                };
                self.names.insert(name.trim().to_string(), v);
                continue;
            };
            // What follows a comma or `#` is the message shown when the assertion fails.
            let cond = cond.split([',', '#']).next().unwrap_or_default();
            self.comparison(line, cond)?;
        }
        Ok(())
    }

    /// `a op b [op c …]`: every adjacent pair must hold.
    fn comparison(&self, line: usize, cond: &str) -> Result<(), Outcome> {
        let (operands, ops) = split_comparison(cond);
        if ops.is_empty() {
            return Err(unsupported(format!("line {line}: `{cond}` (only comparisons are read)")));
        }
        let values = operands
            .iter()
            .map(|o| self.operand(o).ok_or_else(|| unsupported(format!("line {line}: `{o}` in `{}`", cond.trim()))))
            .collect::<Result<Vec<_>, _>>()?;
        for (i, op) in ops.iter().enumerate() {
            let (a, b) = (values[i], values[i + 1]);
            let holds = match *op {
                "==" => a == b,
                "!=" => a != b,
                "<=" => a <= b,
                ">=" => a >= b,
                "<" => a < b,
                _ => a > b,
            };
            if !holds {
                let shown: Vec<String> = operands
                    .iter()
                    .zip(&values)
                    .filter(|(o, _)| o.starts_with("tcpi_"))
                    .map(|(o, v)| format!("{o} is {v}"))
                    .collect();
                return Err(fail(line, format!("expected {}, but {}", cond.trim(), shown.join(", "))));
            }
        }
        Ok(())
    }

    fn operand(&self, text: &str) -> Option<i64> {
        ca_state(text)
            .or_else(|| number(text))
            .or_else(|| self.names.get(text).copied())
            .or_else(|| self.tcp_info(text))
    }

    /// A `tcp_info` field of the socket under test, as Linux reports it.
    fn tcp_info(&self, field: &str) -> Option<i64> {
        let s = &self.conn.as_ref()?.snd;
        let sb = s.scoreboard();
        let us = |ns: u64| (ns / 1000) as i64;
        Some(match field {
            "tcpi_ca_state" => match s.state() {
                CaState::Open => 0,
                CaState::Disorder => 1,
                CaState::Cwr => 2,
                CaState::Recovery => 3,
                CaState::Loss => 4,
            },
            "tcpi_snd_cwnd" => i64::from(s.cwnd()),
            "tcpi_snd_ssthresh" => i64::from(s.ssthresh().min(0x7fff_ffff)),
            "tcpi_backoff" => i64::from(s.backoff()),
            "tcpi_lost" => i64::from(sb.lost_out()),
            "tcpi_unacked" => i64::from(sb.packets_out()),
            "tcpi_sacked" => i64::from(sb.sacked_out()),
            "tcpi_retrans" => i64::from(sb.retrans_out()),
            "tcpi_total_retrans" => s.stats().retransmits as i64,
            "tcpi_reordering" => i64::from(s.reordering().degree()),
            "tcpi_reord_seen" => i64::from(s.reordering().seen()),
            "tcpi_rto" => us(s.rto()),
            "tcpi_rtt" => us(s.srtt()?),
            "tcpi_min_rtt" => us(s.min_rtt()?),
            // The handshake counts one delivery in Linux (tcp_rcv_state_process, tcp_ack).
            "tcpi_delivered" => i64::from(s.delivered()) + 1,
            "tcpi_dsack_dups" => s.dsack_dups() as i64,
            "tcpi_retransmits" => i64::from(s.timeouts_in_row()),
            "tcpi_snd_mss" => i64::from(self.mss),
            "tcpi_state" if self.conn.as_ref()?.fin.is_none() => 1, // TCP_ESTABLISHED
            _ => return None,
        })
    }
}

/// A Python integer literal, decimal or `0x` hexadecimal.
fn number(text: &str) -> Option<i64> {
    match text.strip_prefix("0x") {
        Some(hex) => i64::from_str_radix(hex, 16).ok(),
        None => text.parse().ok(),
    }
}

fn is_name(text: &str) -> bool {
    text.chars().next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && text.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// `a <= b < c` → (["a", "b", "c"], ["<=", "<"]).
fn split_comparison(cond: &str) -> (Vec<String>, Vec<&'static str>) {
    let (mut operands, mut ops) = (Vec::new(), Vec::new());
    let mut rest = cond.trim();
    loop {
        let next = rest
            .char_indices()
            .find_map(|(i, _)| OPERATORS.iter().find(|op| rest[i..].starts_with(**op)).map(|op| (i, *op)));
        match next {
            Some((i, op)) => {
                operands.push(rest[..i].trim().to_string());
                ops.push(op);
                rest = &rest[i + op.len()..];
            }
            None => {
                operands.push(rest.trim().to_string());
                return (operands, ops);
            }
        }
    }
}

/// `TCP_CA_Open` … as the numbers Linux reports.
fn ca_state(name: &str) -> Option<i64> {
    Some(match name {
        "TCP_CA_Open" => 0,
        "TCP_CA_Disorder" => 1,
        "TCP_CA_CWR" => 2,
        "TCP_CA_Recovery" => 3,
        "TCP_CA_Loss" => 4,
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::split_comparison;

    #[test]
    fn chained_comparisons_split_into_operands_and_operators() {
        let (o, ops) = split_comparison(" 300000 <= tcpi_rto < 340000 ");
        assert_eq!(o, ["300000", "tcpi_rto", "340000"]);
        assert_eq!(ops, ["<=", "<"]);
        let (o, ops) = split_comparison("tcpi_ca_state == TCP_CA_Loss");
        assert_eq!((o.len(), ops), (2, vec!["=="]));
    }
}

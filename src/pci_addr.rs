//! `PciAddr`: a PCI function address, `domain:bus:device.function` (`0000:07:00.0`).

use std::fmt;
use std::str::FromStr;

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct PciAddr {
    pub domain: u32,
    pub bus: u8,
    pub device: u8,
    pub function: u8,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{0}` is not a PCI address like `0000:07:00.0`")]
pub struct PciAddrParseError(pub String);

impl FromStr for PciAddr {
    type Err = PciAddrParseError;

    /// Accepts `DDDD:BB:DD.F` and the domain-less `BB:DD.F` (domain 0), any hex case.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let err = || PciAddrParseError(s.to_string());
        let (head, function) = s.rsplit_once('.').ok_or_else(err)?;
        let parts: Vec<&str> = head.split(':').collect();
        let (domain, bus, device) = match parts.as_slice() {
            [d, b, dev] => (*d, *b, *dev),
            [b, dev] => ("0", *b, *dev),
            _ => return Err(err()),
        };
        let hex = |t: &str, max_len: usize| {
            if t.is_empty() || t.len() > max_len {
                return Err(err());
            }
            u32::from_str_radix(t, 16).map_err(|_| err())
        };
        let device = hex(device, 2)?;
        let function = hex(function, 1)?;
        if device > 0x1f || function > 7 {
            return Err(err());
        }
        Ok(PciAddr {
            domain: hex(domain, 8)?,
            bus: hex(bus, 2)? as u8,
            device: device as u8,
            function: function as u8,
        })
    }
}

impl fmt::Display for PciAddr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{:04x}:{:02x}:{:02x}.{:x}",
            self.domain, self.bus, self.device, self.function
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_and_print() {
        let a: PciAddr = "0000:07:00.0".parse().unwrap();
        assert_eq!(a.to_string(), "0000:07:00.0");
        let b: PciAddr = "0035:0A:1f.7".parse().unwrap();
        assert_eq!(b.to_string(), "0035:0a:1f.7");
        let c: PciAddr = "c1:00.0".parse().unwrap();
        assert_eq!(c.to_string(), "0000:c1:00.0");
        assert!(a < c);
        for bad in [
            "",
            "0000:07:00",
            "0000:07:20.0",
            "0000:07:00.8",
            "x:07:00.0",
            "1:2:3:4.0",
        ] {
            assert!(bad.parse::<PciAddr>().is_err(), "{bad}");
        }
    }
}

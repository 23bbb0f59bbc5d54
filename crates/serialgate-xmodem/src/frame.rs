//! One block on the wire: `SOH|STX`, the block number, its complement, 128
//! or 1024 data bytes, then the checksum (one byte) or the CRC (two, high
//! byte first).

use super::{SOH, STX, checksum, crc16};

/// How a block's data is checked.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Check {
    /// The 8-bit sum (original XMODEM, the receiver started with NAK).
    Checksum,
    /// CRC-16/XMODEM (the receiver started with `C`).
    Crc16,
}

impl Check {
    /// Bytes of the check after the data.
    pub fn len(self) -> usize {
        match self {
            Check::Checksum => 1,
            Check::Crc16 => 2,
        }
    }

    /// Always false: a check has bytes (here for clippy's `len` rule).
    pub fn is_empty(self) -> bool {
        false
    }
}

/// A block taken off the wire.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Frame {
    /// The block number (modulo 256).
    pub seq: u8,
    /// The data, 128 or 1024 bytes.
    pub data: Vec<u8>,
}

/// Why bytes are not a good block.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FrameError {
    /// Fewer bytes than the block needs (wait for more).
    Incomplete,
    /// The first byte is neither SOH nor STX.
    NotABlock,
    /// The block number and its complement disagree.
    BadNumber,
    /// The checksum or CRC is wrong.
    BadCheck,
}

/// The frame length of a block starting with `start`, for `check`.
pub fn frame_len(start: u8, check: Check) -> Option<usize> {
    match start {
        SOH => Some(3 + 128 + check.len()),
        STX => Some(3 + 1024 + check.len()),
        _ => None,
    }
}

/// Builds the frame of block `seq` from `data` (128 or 1024 bytes; a
/// shorter slice is padded with `pad`).
pub fn encode(seq: u8, data: &[u8], block: usize, pad: u8, check: Check) -> Vec<u8> {
    let start = if block == 1024 { STX } else { SOH };
    let mut out = Vec::with_capacity(3 + block + check.len());
    out.extend_from_slice(&[start, seq, !seq]);
    out.extend_from_slice(&data[..data.len().min(block)]);
    out.resize(3 + block, pad);
    let payload = &out[3..];
    match check {
        Check::Checksum => out.push(checksum(payload)),
        Check::Crc16 => {
            let crc = crc16(payload);
            out.extend_from_slice(&crc.to_be_bytes());
        }
    }
    out
}

/// Takes the block at the start of `bytes`; returns it and how many bytes
/// it spans.
pub fn decode(bytes: &[u8], check: Check) -> Result<(Frame, usize), FrameError> {
    let Some(&start) = bytes.first() else {
        return Err(FrameError::Incomplete);
    };
    let len = frame_len(start, check).ok_or(FrameError::NotABlock)?;
    if bytes.len() < len {
        return Err(FrameError::Incomplete);
    }
    let (seq, inverse) = (bytes[1], bytes[2]);
    if seq != !inverse {
        return Err(FrameError::BadNumber);
    }
    let data = &bytes[3..len - check.len()];
    let good = match check {
        Check::Checksum => checksum(data) == bytes[len - 1],
        Check::Crc16 => crc16(data).to_be_bytes() == bytes[len - 2..len],
    };
    if !good {
        return Err(FrameError::BadCheck);
    }
    Ok((
        Frame {
            seq,
            data: data.to_vec(),
        },
        len,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::PAD;

    #[test]
    fn a_block_round_trips_and_its_damage_is_seen() {
        for check in [Check::Checksum, Check::Crc16] {
            for block in [128, 1024] {
                let frame = encode(7, b"hello", block, PAD, check);
                assert_eq!(frame.len(), 3 + block + check.len());
                assert_eq!(
                    &frame[..3],
                    &[if block == 128 { SOH } else { STX }, 7, 0xf8]
                );
                let (got, used) = decode(&frame, check).unwrap();
                assert_eq!(used, frame.len());
                assert_eq!(got.seq, 7);
                assert_eq!(&got.data[..5], b"hello");
                assert!(got.data[5..].iter().all(|&b| b == PAD));
                assert_eq!(
                    decode(&frame[..frame.len() - 1], check),
                    Err(FrameError::Incomplete)
                );
                let mut bad = frame.clone();
                bad[10] ^= 0x40;
                assert_eq!(decode(&bad, check), Err(FrameError::BadCheck));
                let mut bad = frame.clone();
                bad[2] = 0;
                assert_eq!(decode(&bad, check), Err(FrameError::BadNumber));
            }
        }
        assert_eq!(decode(b"x", Check::Crc16), Err(FrameError::NotABlock));
    }

    #[test]
    fn the_crc_goes_high_byte_first() {
        let frame = encode(1, &[0u8; 128], 128, 0, Check::Crc16);
        assert_eq!(&frame[131..], &[0, 0]);
        let frame = encode(1, b"123456789", 128, 0, Check::Crc16);
        let crc = crc16(&frame[3..131]);
        assert_eq!(frame[131], (crc >> 8) as u8);
        assert_eq!(frame[132], crc as u8);
    }
}

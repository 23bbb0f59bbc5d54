//! The two block checks: CRC-16/XMODEM (polynomial 0x1021, initial 0, no
//! reflection, sent high byte first) and the 8-bit sum of the data.

/// CRC-16/XMODEM of `data`.
pub fn crc16(data: &[u8]) -> u16 {
    let mut crc: u16 = 0;
    for &byte in data {
        crc ^= u16::from(byte) << 8;
        for _ in 0..8 {
            crc = if crc & 0x8000 != 0 {
                (crc << 1) ^ 0x1021
            } else {
                crc << 1
            };
        }
    }
    crc
}

/// The original XMODEM check: the sum of the data bytes, modulo 256.
pub fn checksum(data: &[u8]) -> u8 {
    data.iter().fold(0u8, |sum, &b| sum.wrapping_add(b))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_standard_check_values() {
        // The catalogue's check value of CRC-16/XMODEM.
        assert_eq!(crc16(b"123456789"), 0x31c3);
        assert_eq!(crc16(b""), 0);
        assert_eq!(crc16(&[0u8; 128]), 0);
        assert_eq!(checksum(b"123456789"), 0xdd);
        assert_eq!(checksum(&[0xff, 0x02]), 0x01);
    }
}

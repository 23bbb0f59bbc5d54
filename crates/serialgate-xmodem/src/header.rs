//! YMODEM's block 0: the file's name, a NUL, its size in decimal (then,
//! optionally, a space and more fields this side ignores), NUL padding. A
//! block 0 whose name is empty ends the batch.

/// Longest file name carried (a header block holds name and size in 128
/// bytes, or 1024).
pub const MAX_NAME: usize = 255;

/// A file as YMODEM's header block announces it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FileHeader {
    /// The name, without directories (the sender's base name).
    pub name: String,
    /// The size in bytes, when the sender gave it.
    pub size: Option<u64>,
}

impl FileHeader {
    /// The header block's data: `name NUL size NUL`, padded with NULs to
    /// 128 bytes, or 1024 when that does not fit.
    pub fn encode(&self) -> Vec<u8> {
        let mut data = Vec::new();
        data.extend_from_slice(self.name.as_bytes());
        data.push(0);
        if let Some(size) = self.size {
            data.extend_from_slice(size.to_string().as_bytes());
        }
        data.push(0);
        let block = if data.len() <= 128 { 128 } else { 1024 };
        data.resize(block, 0);
        data
    }

    /// Reads a header block's data: `None` for the null header that ends a
    /// batch, an error for one that names no file sensibly.
    pub fn decode(data: &[u8]) -> Result<Option<FileHeader>, String> {
        let name_end = data.iter().position(|&b| b == 0).unwrap_or(data.len());
        if name_end == 0 {
            return Ok(None);
        }
        let name = &data[..name_end];
        if name.len() > MAX_NAME {
            return Err(format!("the header's name is {} bytes long", name.len()));
        }
        let name = String::from_utf8_lossy(name).into_owned();
        let rest = data.get(name_end + 1..).unwrap_or_default();
        let field_end = rest
            .iter()
            .position(|&b| b == 0 || b == b' ')
            .unwrap_or(rest.len());
        let size = std::str::from_utf8(&rest[..field_end])
            .ok()
            .filter(|s| !s.is_empty())
            .map(|s| {
                s.parse::<u64>()
                    .map_err(|_| format!("the header's size {s:?} is not a number"))
            })
            .transpose()?;
        Ok(Some(FileHeader { name, size }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn name_and_size_round_trip_and_the_null_header_ends() {
        let h = FileHeader {
            name: "c2960.bin".into(),
            size: Some(1_048_576),
        };
        let data = h.encode();
        assert_eq!(data.len(), 128);
        assert!(data.starts_with(b"c2960.bin\x001048576\x00"));
        assert_eq!(FileHeader::decode(&data), Ok(Some(h)));
        assert_eq!(FileHeader::decode(&[0u8; 128]), Ok(None));
        // lrzsz's sb adds the modification time and mode after a space.
        let got = FileHeader::decode(b"a.txt\x0012 14054013523 100644\x00\x00").unwrap();
        assert_eq!(got.unwrap().size, Some(12));
        let got = FileHeader::decode(b"a.txt\x00\x00").unwrap().unwrap();
        assert_eq!(got.size, None);
        assert!(FileHeader::decode(b"a\x00twelve\x00").is_err());
        let long = FileHeader {
            name: "n".repeat(200),
            size: Some(1),
        };
        assert_eq!(long.encode().len(), 1024);
    }
}

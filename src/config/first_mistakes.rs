//! The mistakes a newcomer makes in a first config, each answered with the
//! fix instead of only the parser's complaint: a list of ports where
//! serialgate names each port by its table (`[[ports]]` with `name =`,
//! as many TOML configs are written), a port's or the server's key at the
//! top of the file, a table written as a list or a list as a table, and
//! a name that is one slip away from a known one.

use serde::de::DeserializeOwned;

use super::raw::{RawPort, RawServer};

/// The named-table sections: each entry is `[SECTION.NAME]`.
const NAMED_TABLES: &[(&str, &str)] = &[
    ("ports", "rtr1"),
    ("presets", "my-ios"),
    ("policies", "my-policy"),
];

/// What to write instead, for a file that is valid TOML but not the
/// shape serialgate reads (`message`: the parser's complaint, which may
/// name the key); `None` when nothing here recognises it.
pub(super) fn hint(text: &str, message: &str) -> Option<String> {
    let table: toml::Table = toml::from_str(text).ok()?;
    for (section, example) in NAMED_TABLES {
        if let Some(toml::Value::Array(entries)) = table.get(*section) {
            let name = entries
                .iter()
                .find_map(|e| e.get("name").and_then(toml::Value::as_str))
                .filter(|n| super::checks::check_name(n).is_ok())
                .unwrap_or(example);
            let leftover = if entries.iter().any(|e| e.get("name").is_some()) {
                ", without its `name` key"
            } else {
                ""
            };
            return Some(format!(
                "`[[{section}]]` makes a list, but serialgate names each entry by its table: \
                 write `[{section}.{name}]` and put that entry's keys under it{leftover} \
                 (config/example.toml shows each section)"
            ));
        }
    }
    if matches!(table.get("server"), Some(toml::Value::Array(_))) {
        return Some(
            "`[[server]]` makes a list: write `[server]`, once, with every server key under it"
                .into(),
        );
    }
    if matches!(table.get("tokens"), Some(toml::Value::Table(_))) {
        return Some(
            "tokens are a list: write `[[tokens]]` before each token's keys (name, secret_file, ports, access)"
                .into(),
        );
    }
    // The key the parser named first, then the others at the top.
    let named = message
        .split("unknown field `")
        .nth(1)
        .and_then(|rest| rest.split('`').next());
    let keys = named
        .and_then(|k| table.get_key_value(k))
        .into_iter()
        .chain(&table);
    for (key, _) in keys {
        if is_field_of::<RawServer>(key) {
            return Some(format!(
                "`{key}` is a server setting: move it under `[server]`"
            ));
        }
        if is_field_of::<RawPort>(key) {
            return Some(format!(
                "`{key}` is a port's setting: put it under a table naming the port, \
                 e.g. `[ports.rtr1]` then `device = \"/dev/ttyUSB0\"`"
            ));
        }
    }
    None
}

/// Whether `key` is a field of `T`'s table, as its derived `Deserialize`
/// names them (a key of the wrong type still is).
fn is_field_of<T: DeserializeOwned>(key: &str) -> bool {
    let fields = std::cell::Cell::new(&[][..]);
    let _ = T::deserialize(FieldNames(&fields));
    fields.get().contains(&key)
}

/// A deserializer that only hears the field names a struct asks for.
struct FieldNames<'a>(&'a std::cell::Cell<&'static [&'static str]>);

impl<'de> serde::Deserializer<'de> for FieldNames<'_> {
    type Error = serde::de::value::Error;

    fn deserialize_struct<V: serde::de::Visitor<'de>>(
        self,
        _name: &'static str,
        fields: &'static [&'static str],
        _visitor: V,
    ) -> Result<V::Value, Self::Error> {
        self.0.set(fields);
        Err(serde::de::Error::custom(
            "only the field names were asked for",
        ))
    }

    fn deserialize_any<V: serde::de::Visitor<'de>>(
        self,
        _visitor: V,
    ) -> Result<V::Value, Self::Error> {
        Err(serde::de::Error::custom("not a struct"))
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string
        bytes byte_buf option unit unit_struct newtype_struct seq tuple
        tuple_struct map enum identifier ignored_any
    }
}

/// The known name `given` most likely meant: one edit or swap away, or
/// the known name that has `given` as one of its dash-separated words
/// (`junos` for `juniper-junos`); `None` when nothing is that close.
pub(super) fn did_you_mean<'a>(given: &str, known: &[&'a str]) -> Option<&'a str> {
    let given_lower = given.to_ascii_lowercase();
    let by_distance = known
        .iter()
        .map(|k| (edit_distance(&given_lower, k), *k))
        .filter(|(d, k)| *d <= 2 && *d < k.len() / 2 + 1)
        .min_by_key(|(d, _)| *d)
        .map(|(_, k)| k);
    by_distance.or_else(|| {
        let mut words = known
            .iter()
            .filter(|k| k.split('-').any(|w| w == given_lower));
        let first = words.next()?;
        // Only when it names one preset (`cisco` names three).
        words.next().is_none().then_some(*first)
    })
}

/// Edits (insert, delete, substitute, swap two neighbours) from `a` to
/// `b`, on bytes: names are ASCII.
fn edit_distance(a: &str, b: &str) -> usize {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    let mut rows = vec![vec![0usize; b.len() + 1]; a.len() + 1];
    for (i, row) in rows.iter_mut().enumerate() {
        row[0] = i;
    }
    for (j, cell) in rows[0].iter_mut().enumerate() {
        *cell = j;
    }
    for i in 1..=a.len() {
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            let mut best = (rows[i - 1][j] + 1)
                .min(rows[i][j - 1] + 1)
                .min(rows[i - 1][j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                best = best.min(rows[i - 2][j - 2] + 1);
            }
            rows[i][j] = best;
        }
    }
    rows[a.len()][b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_list_of_ports_is_answered_with_the_named_table() {
        let text = "[[ports]]\nname = \"rtr1\"\ndevice = \"/dev/ttyUSB0\"\n";
        let h = hint(text, "").expect("a hint");
        assert!(h.contains("`[ports.rtr1]`"), "{h}");
        assert!(h.contains("without its `name` key"), "{h}");
        let h = hint("[[presets]]\nextends = \"cisco-ios\"\n", "").expect("a hint");
        assert!(h.contains("`[presets.my-ios]`"), "{h}");
    }

    #[test]
    fn a_key_at_the_top_is_sent_to_its_section() {
        let h = hint("device = \"/dev/ttyUSB0\"\n", "").expect("a hint");
        assert!(h.contains("`[ports.rtr1]`"), "{h}");
        let h = hint("baud = 115200\n", "").expect("a hint");
        assert!(h.contains("port's setting"), "{h}");
        let h = hint("listen = \"0.0.0.0:7301\"\n", "").expect("a hint");
        assert!(h.contains("under `[server]`"), "{h}");
        assert_eq!(hint("colour = \"blue\"\n", ""), None);
    }

    #[test]
    fn lists_and_tables_the_wrong_way_round() {
        assert!(
            hint("[[server]]\nlisten = \"x\"\n", "")
                .unwrap()
                .contains("`[server]`, once")
        );
        assert!(
            hint("[tokens]\nname = \"noc\"\n", "")
                .unwrap()
                .contains("`[[tokens]]`")
        );
    }

    #[test]
    fn a_slip_in_a_name_finds_the_name() {
        let presets = [
            "arista-eos",
            "cisco-ios",
            "cisco-nxos",
            "frr",
            "juniper-junos",
            "linux",
        ];
        assert_eq!(did_you_mean("cisco-iso", &presets), Some("cisco-ios"));
        assert_eq!(did_you_mean("Cisco-IOS", &presets), Some("cisco-ios"));
        assert_eq!(did_you_mean("cisco_ios", &presets), Some("cisco-ios"));
        assert_eq!(did_you_mean("junos", &presets), Some("juniper-junos"));
        assert_eq!(did_you_mean("linx", &presets), Some("linux"));
        assert_eq!(did_you_mean("cisco", &presets), None);
        assert_eq!(did_you_mean("ftp", &presets), None);
        assert_eq!(did_you_mean("vyos", &presets), None);
    }
}

//! Cleanup of real console byte sequences, each checked one-shot and under
//! every chunking.

use regex::Regex;

use super::*;

/// IOS' erase after ` --More-- `: 9 backspaces, 9 spaces, 9 backspaces.
const IOS_ERASE: &[u8] =
    b"\x08\x08\x08\x08\x08\x08\x08\x08\x08         \x08\x08\x08\x08\x08\x08\x08\x08\x08";
/// The same from IOS versions that send 10.
const IOS_ERASE_10: &[u8] =
    b"\x08\x08\x08\x08\x08\x08\x08\x08\x08\x08          \x08\x08\x08\x08\x08\x08\x08\x08\x08\x08";
const IOS_PAGER: &[&[u8]] = &[b" --More-- "];
const JUNOS_PAGER: &[&[u8]] = &[b"---(more"];
const HUAWEI_PAGER: &[&[u8]] = &[b"  ---- More ----"];
/// Huawei's erase: back 42 columns, 42 spaces, back 42 columns.
const HUAWEI_ERASE: &[u8] = b"\x1b[42D                                          \x1b[42D";
/// The variant of other VRP releases and H3C Comware: back over the 16
/// columns of the prompt, 16 spaces, back again.
const HUAWEI_ERASE_16: &[u8] = b"\x1b[16D                \x1b[16D";
const ARISTA_PAGER: &[&[u8]] = &[b" --More-- "];
const PROCURVE_MORE: &[u8] = b"-- MORE --, next page: Space, next line: Enter, quit: Control-C";
const PROCURVE_PAGER: &[&[u8]] = &[PROCURVE_MORE];
/// ProCurve's VT100 erase after a key at its pager: cursor to the start of
/// the bottom line, erase the line, show the cursor.
const PROCURVE_ERASE: &[u8] = b"\x1b[24;1H\x1b[2K\x1b[24;1H\x1b[?25h\x1b[24;1H";
/// A pager no preset knows, configured as a literal.
const CUSTOM_PAGER: &[&[u8]] = &[b"<Press SPACE for more, q to quit>"];

/// One capture: the raw bytes between the send and the prompt, and what
/// an engineer reads.
struct Case {
    name: &'static str,
    raw: Vec<u8>,
    command: Option<&'static str>,
    pagers: &'static [&'static [u8]],
    expected: &'static str,
}

fn cat(parts: &[&[u8]]) -> Vec<u8> {
    parts.concat()
}

fn cases() -> Vec<Case> {
    vec![
        Case {
            name: "ios_running_config",
            raw: cat(&[
                b"show running-config\r\n",
                b"Building configuration...\r\n",
                b"\r\n",
                b"Current configuration : 1089 bytes\r\n",
                b"!\r\n",
                b"version 15.2\r\n",
                b"hostname SW1\r\n",
                b"!\r\n",
                b"interface Vlan1\r\n",
                b" --More-- ",
                IOS_ERASE,
                b" ip address 10.0.0.1 255.255.255.0\r\n",
                b" no shutdown\r\n",
                b"!\r\n",
                b" --More-- ",
                IOS_ERASE_10,
                b"line con 0\r\n",
                b" logging synchronous\r\n",
                b" --More-- ",
                IOS_ERASE,
                b"end\r\n",
                b"\r\n",
            ]),
            command: Some("show running-config"),
            pagers: IOS_PAGER,
            expected: "Building configuration...\n\
                       \n\
                       Current configuration : 1089 bytes\n\
                       !\n\
                       version 15.2\n\
                       hostname SW1\n\
                       !\n\
                       interface Vlan1\n \
                       ip address 10.0.0.1 255.255.255.0\n \
                       no shutdown\n\
                       !\n\
                       line con 0\n \
                       logging synchronous\n\
                       end",
        },
        Case {
            name: "ios_pager_with_common_list",
            raw: cat(&[
                b"show vlan\r\n",
                b"1    default  active\r\n",
                b" --More-- ",
                IOS_ERASE,
                b"10   users    active\r\n",
            ]),
            command: Some("show vlan"),
            pagers: COMMON_PAGERS,
            expected: "1    default  active\n10   users    active",
        },
        Case {
            name: "nxos_reverse_video_more",
            raw: cat(&[
                b"show interface brief\r\n",
                b"Eth1/1        1    eth  access up\r\n",
                b"\x1b[7m--More--\x1b[27m",
                b"\r          \r",
                b"Eth1/2        1    eth  access down\r\n",
                b"\x1b[7m--More--\x1b[m",
                b"\r\n",
                b"Eth1/3        1    eth  access up\r\n",
            ]),
            command: Some("show interface brief"),
            pagers: COMMON_PAGERS,
            expected: "Eth1/1        1    eth  access up\n\
                       Eth1/2        1    eth  access down\n\
                       Eth1/3        1    eth  access up",
        },
        Case {
            name: "coloured_indented_line_after_pager",
            raw: cat(&[
                b"interface Vlan1\r\n --More-- ",
                IOS_ERASE,
                b" \x1b[1mip address 10.0.0.1 255.255.255.0\x1b[0m\r\n",
            ]),
            command: None,
            pagers: COMMON_PAGERS,
            expected: "interface Vlan1\n ip address 10.0.0.1 255.255.255.0",
        },
        Case {
            name: "prompt_prefixed_echo",
            raw: b"SW1#show clock\r\n*10:01:02.003 UTC Mon Mar 4 2024\r\n".to_vec(),
            command: Some("show clock"),
            pagers: IOS_PAGER,
            expected: "*10:01:02.003 UTC Mon Mar 4 2024",
        },
        Case {
            name: "junos_prompt_echo",
            raw: b"\r\nuser@r1> show system uptime \r\nCurrent time: 2024-03-04 10:01:02 UTC\r\n"
                .to_vec(),
            command: Some("show system uptime"),
            pagers: JUNOS_PAGER,
            expected: "Current time: 2024-03-04 10:01:02 UTC",
        },
        Case {
            name: "no_echo_keeps_first_line",
            raw: b"*10:01:02.003 UTC Mon Mar 4 2024\r\nNTP synchronized\r\n".to_vec(),
            command: Some("show clock"),
            pagers: IOS_PAGER,
            expected: "*10:01:02.003 UTC Mon Mar 4 2024\nNTP synchronized",
        },
        Case {
            name: "command_inside_a_word_is_not_echo",
            raw: b"noshow clock\r\n".to_vec(),
            command: Some("show clock"),
            pagers: &[],
            expected: "noshow clock",
        },
        Case {
            name: "no_command_no_echo_removal",
            raw: b"show clock\r\n10:01\r\n".to_vec(),
            command: None,
            pagers: &[],
            expected: "show clock\n10:01",
        },
        Case {
            name: "ios_invalid_input",
            raw: b"show vlan brie\r\n              ^\r\n% Invalid input detected at '^' marker.\r\n\r\n"
                .to_vec(),
            command: Some("show vlan brie"),
            pagers: IOS_PAGER,
            expected: "              ^\n% Invalid input detected at '^' marker.",
        },
        Case {
            name: "ansi_colours_and_erase_line",
            raw: cat(&[
                b"\x1b]0;admin@linux: ~\x07ls --color\r\n",
                b"\x1b[0m\x1b[01;34mbin\x1b[0m  \x1b[01;32mrun.sh\x1b[0m\x1b[K\r\n",
                b"\x1b[?25l\x1b(B\x1b=plain\x1b[K\r\n",
                b"progress 10%\r\x1b[Kdone\r\n",
            ]),
            command: Some("ls --color"),
            pagers: &[],
            expected: "bin  run.sh\nplain\ndone",
        },
        Case {
            name: "junos_more_percent",
            raw: cat(&[
                b"show interfaces terse\r\n",
                b"Interface               Admin Link Proto\r\n",
                b"ge-0/0/0                up    up\r\n",
                b"---(more 27%)---",
                b"\r                                        \r",
                b"ge-0/0/1                up    down\r\n",
                b"---(more)---",
                b"\r\x00\x00            \r",
                b"lo0                     up    up\r\n",
                b"---(more 100%)---",
                b"\r                                        \r",
                b"\r\n",
            ]),
            command: Some("show interfaces terse"),
            pagers: JUNOS_PAGER,
            expected: "Interface               Admin Link Proto\n\
                       ge-0/0/0                up    up\n\
                       ge-0/0/1                up    down\n\
                       lo0                     up    up",
        },
        Case {
            name: "huawei_more",
            raw: cat(&[
                b"display current-configuration\r\n",
                b"#\r\n",
                b"interface GigabitEthernet0/0/1\r\n",
                b"  ---- More ----",
                HUAWEI_ERASE,
                b" port link-type trunk\r\n",
                b"#\r\n",
                b"  ---- More ----",
                HUAWEI_ERASE,
                b"return\r\n",
            ]),
            command: Some("display current-configuration"),
            pagers: HUAWEI_PAGER,
            expected: "#\n\
                       interface GigabitEthernet0/0/1\n \
                       port link-type trunk\n\
                       #\n\
                       return",
        },
        Case {
            name: "huawei_more_with_common_list",
            raw: cat(&[
                b"#\r\n",
                b"  ---- More ----",
                HUAWEI_ERASE,
                b"sysname HUAWEI\r\n",
            ]),
            command: None,
            pagers: COMMON_PAGERS,
            expected: "#\nsysname HUAWEI",
        },
        Case {
            name: "line_endings",
            raw: b"one\r\r\ntwo\r\nthree\n\rfour\nfive".to_vec(),
            command: None,
            pagers: &[],
            expected: "one\ntwo\nthree\nfour\nfive",
        },
        Case {
            name: "backspace_and_cr_overwrite",
            raw: b"abc\x08\x08XY\r\n\x08\x08start\r\nprogress 10%\rprogress 20%\r\nlonger line\rshort\r\n"
                .to_vec(),
            command: None,
            pagers: &[],
            expected: "aXY\nstart\nprogress 20%\nshortr line",
        },
        Case {
            name: "echo_with_typed_backspace",
            raw: b"shoe\x08w clock\r\n10:01\r\n".to_vec(),
            command: Some("show clock"),
            pagers: &[],
            expected: "10:01",
        },
        Case {
            name: "invalid_utf8",
            raw: b"caf\xc3\xa9 \xff ok \xe2\x9c\x93\r\n\x80x\r\ncut \xe2\x82".to_vec(),
            command: None,
            pagers: &[],
            expected: "caf\u{e9} \u{fffd} ok \u{2713}\n\u{fffd}x\ncut \u{fffd}",
        },
        Case {
            name: "nul_removed_tab_kept",
            raw: b"a\x00b\tc\x07\r\n".to_vec(),
            command: None,
            pagers: &[],
            expected: "ab\tc",
        },
        Case {
            name: "pager_at_end_without_erase",
            raw: b"line1\r\nline2\r\n --More-- ".to_vec(),
            command: None,
            pagers: IOS_PAGER,
            expected: "line1\nline2",
        },
        Case {
            name: "junos_pager_at_end_without_erase",
            raw: b"line1\r\n---(more 50%)---".to_vec(),
            command: None,
            pagers: JUNOS_PAGER,
            expected: "line1",
        },
        Case {
            name: "cut_pager_prefix_is_text",
            raw: b"line1\r\n --Mo".to_vec(),
            command: None,
            pagers: IOS_PAGER,
            expected: "line1\n --Mo",
        },
        Case {
            name: "whitespace_trimmed",
            raw: b"\r\n\r\n  indented   \r\n\r\nafter blank\t \r\n \r\n\r\n".to_vec(),
            command: None,
            pagers: &[],
            expected: "  indented\n\nafter blank",
        },
        Case {
            name: "overlapping_pagers",
            raw: cat(&[b"a\r\n--More-- (q)", IOS_ERASE, b"b\r\n--More--\r\nc"]),
            command: None,
            pagers: &[b"--More--", b"--More-- (q)"],
            expected: "a\nb\nc",
        },
        Case {
            name: "junos_more_variants",
            raw: cat(&[
                b"show route\r\n",
                b"inet.0: 12 destinations, 12 routes\r\n",
                b"---(more)---",
                b"\r\x00\x00\x00\x00                \r",
                b"10.0.0.0/8         *[Static/5] 1w2d\r\n",
                b"---(more 27%)---",
                b"\r\x00                \r",
                b"                    >  to 192.0.2.1 via ge-0/0/0.0\r\n",
                b"---(more 100%)---",
                b"\r                 \r",
            ]),
            command: Some("show route"),
            pagers: JUNOS_PAGER,
            expected: "inet.0: 12 destinations, 12 routes\n\
                       10.0.0.0/8         *[Static/5] 1w2d\n                    \
                       >  to 192.0.2.1 via ge-0/0/0.0",
        },
        Case {
            name: "huawei_more_16d",
            raw: cat(&[
                b"display interface brief\r\n",
                b"GE0/0/1    up    up\r\n",
                b"  ---- More ----",
                HUAWEI_ERASE_16,
                b"GE0/0/2    down  down\r\n",
                b"  ---- More ----",
                HUAWEI_ERASE_16,
                b"  LoopBack0  up    up(s)\r\n",
            ]),
            command: Some("display interface brief"),
            pagers: HUAWEI_PAGER,
            expected: "GE0/0/1    up    up\nGE0/0/2    down  down\n  LoopBack0  up    up(s)",
        },
        Case {
            name: "h3c_more_with_common_list",
            raw: cat(&[
                b"<H3C>display version\r\n",
                b"H3C Comware Software, Version 7.1.064\r\n",
                b"  ---- More ----",
                HUAWEI_ERASE_16,
                b"Copyright (c) 2004-2021 New H3C Technologies Co., Ltd.\r\n",
            ]),
            command: Some("display version"),
            pagers: COMMON_PAGERS,
            expected: "H3C Comware Software, Version 7.1.064\n\
                       Copyright (c) 2004-2021 New H3C Technologies Co., Ltd.",
        },
        Case {
            name: "arista_more",
            raw: cat(&[
                b"show interfaces status\r\n",
                b"Port  Name   Status       Vlan\r\n",
                b"Et1   spine1 connected    routed\r\n",
                b" --More-- ",
                b"\r          \r",
                b"Et2   spine2 connected    routed\r\n",
                b" --More-- ",
                IOS_ERASE,
                b"Et3          notconnect   1\r\n",
            ]),
            command: Some("show interfaces status"),
            pagers: ARISTA_PAGER,
            expected: "Port  Name   Status       Vlan\n\
                       Et1   spine1 connected    routed\n\
                       Et2   spine2 connected    routed\n\
                       Et3          notconnect   1",
        },
        Case {
            name: "alliedware_more_with_bell",
            raw: cat(&[
                b"show running-config\r\n",
                b"clock timezone JST plus 9:00\r\n",
                b"\x1b[7m--More--\x1b[m\x07",
                b"\r        \r",
                b"!\r\n",
            ]),
            command: Some("show running-config"),
            pagers: COMMON_PAGERS,
            expected: "clock timezone JST plus 9:00\n!",
        },
        Case {
            name: "procurve_more",
            raw: cat(&[
                b"show running-config\r\n",
                b"\r\nRunning configuration:\r\n\r\n",
                b"hostname \"ProCurve\"\r\n",
                b"\x1b[24;1H",
                PROCURVE_MORE,
                PROCURVE_ERASE,
                b"vlan 1\r\n",
                b"   name \"DEFAULT_VLAN\"\r\n",
                b"\x1b[24;1H",
                PROCURVE_MORE,
                PROCURVE_ERASE,
                b"   untagged 1-24\r\n",
            ]),
            command: Some("show running-config"),
            pagers: PROCURVE_PAGER,
            expected: "Running configuration:\n\
                       \n\
                       hostname \"ProCurve\"\n\
                       vlan 1\n   \
                       name \"DEFAULT_VLAN\"\n   \
                       untagged 1-24",
        },
        Case {
            name: "procurve_more_with_common_list_and_cr_erase",
            raw: cat(&[
                b"line 1\r\n",
                PROCURVE_MORE,
                b"\r                                                               \r",
                b"line 2\r\n",
            ]),
            command: None,
            pagers: COMMON_PAGERS,
            expected: "line 1\nline 2",
        },
        Case {
            name: "procurve_nel_line_ends",
            raw: b"show vlans\x1bE VLAN ID Name\x1bE ------- ----\x1bE 1       DEFAULT_VLAN\x1bE".to_vec(),
            command: Some("show vlans"),
            pagers: PROCURVE_PAGER,
            expected: " VLAN ID Name\n ------- ----\n 1       DEFAULT_VLAN",
        },
        Case {
            name: "custom_pager_literal",
            raw: cat(&[
                b"show log\r\n",
                b"boot ok\r\n",
                b"<Press SPACE for more, q to quit>",
                b"\r                                 \r",
                b"link up\r\n",
                b"<Press SPACE for more, q to quit>",
                b"\x08\x08\x08\x08\x08\x08\x08\x08\x08\x08\x08\x08\x08\x08\x08\x08\x08\x08\x08\x08\x08\x08\x08\x08\x08\x08\x08\x08\x08\x08\x08\x08\x08",
                b"link down\r\n",
            ]),
            command: Some("show log"),
            pagers: CUSTOM_PAGER,
            expected: "boot ok\nlink up\nlink down",
        },
        Case {
            name: "junos_tab_completion_repaints_echo",
            raw: b"sh\x08\x08show system uptime \r\nCurrent time: 2024-03-04 10:01:02 UTC\r\n".to_vec(),
            command: Some("sh\tsystem uptime"),
            pagers: JUNOS_PAGER,
            expected: "Current time: 2024-03-04 10:01:02 UTC",
        },
        Case {
            name: "junos_space_completion_of_abbreviations",
            raw: b"sh\x08\x08show sys\x08\x08\x08system up\r\nCurrent time: 2024-03-04 10:01:02 UTC\r\n"
                .to_vec(),
            command: Some("sh sys up"),
            pagers: JUNOS_PAGER,
            expected: "Current time: 2024-03-04 10:01:02 UTC",
        },
        Case {
            name: "echo_wrapped_with_crlf",
            // The prompt is not part of what send_command reads: the echo
            // starts at column 11, and the device wraps it at column 80.
            raw: cat(&[
                b"show configuration | match \"link-0007 to dist-07.lab.example.ne\r\n",
                b"t\" | no-more\r\n",
                b"    description \"link-0007 to dist-07.lab.example.net\";\r\n",
            ]),
            command: Some(
                "show configuration | match \"link-0007 to dist-07.lab.example.net\" | no-more",
            ),
            pagers: JUNOS_PAGER,
            expected: "    description \"link-0007 to dist-07.lab.example.net\";",
        },
        Case {
            name: "echo_wrapped_with_space_cr",
            raw: cat(&[
                b"show configuration | match \"link-0007 to dist-07.lab.example.ne \r",
                b"t\" | no-more\r\n",
                b"    description \"link-0007 to dist-07.lab.example.net\";\r\n",
            ]),
            command: Some(
                "show configuration | match \"link-0007 to dist-07.lab.example.net\" | no-more",
            ),
            pagers: JUNOS_PAGER,
            expected: "    description \"link-0007 to dist-07.lab.example.net\";",
        },
        Case {
            name: "echo_wrapped_at_a_space_after_a_prompt",
            raw: cat(&[
                b"admin@mx1> show interfaces ge-0/0/0 \r",
                b" extensive\r\n",
                b"Physical interface: ge-0/0/0, Enabled, Physical link is Up\r\n",
            ]),
            command: Some("show interfaces ge-0/0/0 extensive"),
            pagers: JUNOS_PAGER,
            expected: "Physical interface: ge-0/0/0, Enabled, Physical link is Up",
        },
        Case {
            name: "wrapped_echo_start_that_is_not_an_echo",
            raw: b"show inter\r\nfaces are down\r\nshow \rno\r\n".to_vec(),
            command: Some("show interfaces"),
            pagers: &[],
            expected: "show inter\nfaces are down\nnoow",
        },
        Case {
            name: "no_echo_first_line_like_the_start_of_the_command",
            raw: b"10:01 sh\r\n".to_vec(),
            command: Some("show clock"),
            pagers: &[],
            expected: "10:01 sh",
        },
        Case {
            name: "empty",
            raw: Vec::new(),
            command: Some("show clock"),
            pagers: IOS_PAGER,
            expected: "",
        },
    ]
}

fn case(name: &str) -> Case {
    cases()
        .into_iter()
        .find(|c| c.name == name)
        .unwrap_or_else(|| panic!("no case {name}"))
}

fn opts(c: &Case) -> CleanOptions<'_> {
    CleanOptions {
        command: c.command,
        pagers: c.pagers,
    }
}

fn chunked(raw: &[u8], opts: &CleanOptions, cuts: &[usize]) -> String {
    let mut cleaner = Cleaner::new(opts);
    let mut at = 0;
    for &cut in cuts {
        cleaner.feed(&raw[at..cut]);
        at = cut;
    }
    cleaner.feed(&raw[at..]);
    cleaner.finish()
}

/// One-shot result is what the engineer reads.
fn check(name: &str) {
    let c = case(name);
    assert_eq!(clean_output(&c.raw, &opts(&c)), c.expected, "case {name}");
}

#[test]
fn ios_running_config_gives_exactly_the_config_lines() {
    check("ios_running_config");
    check("ios_pager_with_common_list");
    check("coloured_indented_line_after_pager");
}

#[test]
fn nxos_reverse_video_more() {
    check("nxos_reverse_video_more");
}

#[test]
fn echo_line_removed() {
    check("ios_running_config");
    check("prompt_prefixed_echo");
    check("junos_prompt_echo");
    check("echo_with_typed_backspace");
}

#[test]
fn device_without_echo_keeps_its_first_line() {
    check("no_echo_keeps_first_line");
    check("command_inside_a_word_is_not_echo");
    check("no_command_no_echo_removal");
}

#[test]
fn ios_invalid_input_reported_with_its_marker() {
    let c = case("ios_invalid_input");
    let clean = clean_output(&c.raw, &opts(&c));
    assert_eq!(clean, c.expected);
    let ios: Vec<Regex> = [
        r"^% Invalid input detected",
        r"^% Ambiguous command",
        r"^% Incomplete command",
    ]
    .iter()
    .map(|p| Regex::new(p).unwrap())
    .collect();
    assert_eq!(
        error_lines(&clean, &ios),
        ["              ^", "% Invalid input detected at '^' marker."]
    );
    assert_eq!(
        error_lines("% Ambiguous command:  \"sh i\"", &ios),
        ["% Ambiguous command:  \"sh i\""]
    );
    let clean_ok = clean_output(
        b"show clock\r\n10:01\r\n",
        &opts(&case("prompt_prefixed_echo")),
    );
    assert!(error_lines(&clean_ok, &ios).is_empty());
    assert!(error_lines(&clean, &[]).is_empty());
}

#[test]
fn junos_syntax_error_reported() {
    let raw = b"set foo\r\n       ^\r\nsyntax error.\r\n\r\n[edit]\r\nerror: syntax error: foo\r\n";
    let clean = clean_output(
        raw,
        &CleanOptions {
            command: Some("set foo"),
            pagers: JUNOS_PAGER,
        },
    );
    let junos = [Regex::new("error: syntax error").unwrap()];
    assert_eq!(error_lines(&clean, &junos), ["error: syntax error: foo"]);
}

#[test]
fn ansi_colours_and_erase_line_stripped() {
    check("ansi_colours_and_erase_line");
}

#[test]
fn junos_more_with_percentage_and_cr_spaces_cr() {
    check("junos_more_percent");
    check("junos_pager_at_end_without_erase");
}

#[test]
fn huawei_more_with_cursor_left_erase() {
    check("huawei_more");
    check("huawei_more_with_common_list");
    check("huawei_more_16d");
    check("h3c_more_with_common_list");
}

#[test]
fn junos_more_with_nul_redraws() {
    check("junos_more_variants");
}

#[test]
fn arista_and_alliedware_more() {
    check("arista_more");
    check("alliedware_more_with_bell");
}

#[test]
fn procurve_more_with_vt100_erase() {
    check("procurve_more");
    check("procurve_more_with_common_list_and_cr_erase");
    check("procurve_nel_line_ends");
}

#[test]
fn any_pager_literal_can_be_configured() {
    check("custom_pager_literal");
    // Without the literal, a terminal shows what the backspace erase left:
    // the next line written over the pager text.
    let c = case("custom_pager_literal");
    let kept = clean_output(
        &c.raw,
        &CleanOptions {
            command: c.command,
            pagers: &[],
        },
    );
    assert!(
        kept.ends_with("link downACE for more, q to quit>"),
        "{kept:?}"
    );
}

#[test]
fn echo_repainted_completed_or_wrapped_is_removed() {
    check("junos_tab_completion_repaints_echo");
    check("junos_space_completion_of_abbreviations");
    check("echo_wrapped_with_crlf");
    check("echo_wrapped_with_space_cr");
    check("echo_wrapped_at_a_space_after_a_prompt");
}

#[test]
fn rows_that_only_look_like_a_wrapped_echo_are_kept() {
    check("wrapped_echo_start_that_is_not_an_echo");
    check("no_echo_first_line_like_the_start_of_the_command");
}

#[test]
fn line_endings_become_one_newline() {
    check("line_endings");
}

#[test]
fn backspace_and_cr_overwrite() {
    check("backspace_and_cr_overwrite");
}

#[test]
fn invalid_utf8_becomes_replacement_character() {
    check("invalid_utf8");
}

#[test]
fn nul_removed_tab_kept() {
    check("nul_removed_tab_kept");
}

#[test]
fn pager_at_end_removed_cut_prefix_kept() {
    check("pager_at_end_without_erase");
    check("cut_pager_prefix_is_text");
    check("overlapping_pagers");
}

#[test]
fn whitespace_trimmed_and_empty_output() {
    check("whitespace_trimmed");
    check("empty");
}

#[test]
fn every_chunking_gives_the_one_shot_result() {
    for c in cases() {
        let o = opts(&c);
        let whole = clean_output(&c.raw, &o);
        assert_eq!(whole, c.expected, "case {}", c.name);
        let n = c.raw.len();
        for cut in 0..=n {
            assert_eq!(
                chunked(&c.raw, &o, &[cut]),
                whole,
                "case {} cut at {cut}",
                c.name
            );
        }
        let every: Vec<usize> = (1..n).collect();
        assert_eq!(
            chunked(&c.raw, &o, &every),
            whole,
            "case {} byte by byte",
            c.name
        );
        // Two cuts around the pagers and escape sequences of short cases.
        if n <= 64 {
            for a in 0..=n {
                for b in a..=n {
                    assert_eq!(
                        chunked(&c.raw, &o, &[a, b]),
                        whole,
                        "case {} cuts at {a} and {b}",
                        c.name
                    );
                }
            }
        }
    }
}

#[test]
fn output_has_no_control_characters() {
    for c in cases() {
        let clean = clean_output(&c.raw, &opts(&c));
        assert!(
            !clean
                .chars()
                .any(|ch| ch.is_control() && ch != '\n' && ch != '\t'),
            "case {}: {clean:?}",
            c.name
        );
    }
}

#[test]
fn large_paged_output_in_one_call() {
    let mut raw = b"show running-config\r\n".to_vec();
    let mut lines = 0;
    while raw.len() < 4 << 20 {
        for _ in 0..23 {
            raw.extend_from_slice(format!(" description uplink {lines:08}\r\n").as_bytes());
            lines += 1;
        }
        raw.extend_from_slice(b" --More-- ");
        raw.extend_from_slice(IOS_ERASE);
    }
    let opts = CleanOptions {
        command: Some("show running-config"),
        pagers: COMMON_PAGERS,
    };
    let clean = clean_output(&raw, &opts);
    assert_eq!(clean.lines().count(), lines);
    assert!(clean.lines().all(|l| l.starts_with(" description uplink ")));
    assert!(!clean.contains("More"));
}

mod chunking {
    //! Random console byte soup, fed in random chunks, against one call.

    use proptest::prelude::*;

    use super::super::*;

    /// Pieces that make the pager filter, the parser and the UTF-8 carry
    /// keep state across a chunk boundary.
    const PIECES: &[&[u8]] = &[
        b" --More-- ",
        b"--More--",
        b"---(more",
        b"---(more 27%)---",
        b")---",
        b"  ---- More ----",
        b"---- More ----",
        b"\x08",
        b"\x08\x08\x08\x08\x08\x08\x08\x08\x08",
        b"         ",
        b" ",
        b"\r",
        b"\n",
        b"\r\n",
        b"\x00",
        b"\t",
        b"\x1b[42D",
        b"\x1b[16D",
        b"\x1b[24;1H",
        b"\x1b[?25h",
        b"\x1b[1;24r",
        b"\x1bE",
        b"\x07",
        b"-- MORE --, next page: Space, next line: Enter, quit: Control-C",
        b"-- MORE --, next",
        b"sh\x08\x08show ",
        b" \r",
        b"\x1b[K",
        b"\x1b[2K",
        b"\x1b[1;31m",
        b"\x1b[7m",
        b"\x1b[27m",
        b"\x1b[",
        b"\x1b]0;title\x07",
        b"\x1b(B",
        b"\x1b",
        b"show clock",
        b"show",
        b"sh",
        b"clo",
        b"SW1#",
        b"abc",
        b"caf\xc3\xa9",
        b"\xc3",
        b"\xe2\x82",
        b"\xe2\x9c\x93",
        b"\xf0\x9f\x98\x80",
        b"\xff",
        b"\x9b",
        b"(",
        b")",
        b"-",
    ];

    fn soup() -> impl Strategy<Value = Vec<u8>> {
        prop::collection::vec(prop::sample::select(PIECES), 0..40).prop_map(|p| p.concat())
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        #[test]
        fn random_chunks_give_the_one_shot_result(
            raw in soup(),
            cuts in prop::collection::vec(any::<prop::sample::Index>(), 0..8),
            echo in any::<bool>(),
        ) {
            let opts = CleanOptions {
                command: echo.then_some("show clock"),
                pagers: COMMON_PAGERS,
            };
            let whole = clean_output(&raw, &opts);
            let mut cuts: Vec<usize> = cuts.iter().map(|i| i.index(raw.len() + 1)).collect();
            cuts.sort_unstable();
            let mut cleaner = Cleaner::new(&opts);
            let mut at = 0;
            for cut in cuts {
                cleaner.feed(&raw[at..cut]);
                at = cut;
            }
            cleaner.feed(&raw[at..]);
            prop_assert_eq!(cleaner.finish(), whole);
        }
    }
}

mod fields {
    use super::*;

    #[test]
    fn a_real_bash_prompt_is_what_a_person_reads() {
        // bash 5.2 after /bin/login, TERM=xterm: bracketed paste on, the
        // window title, then PS1 with its space.
        assert_eq!(
            clean_field(b"\x1b[?2004h\x1b]0;netops@vm: ~\x07netops@vm:~$ "),
            "netops@vm:~$ "
        );
        // Debian's coloured PS1.
        assert_eq!(
            clean_field(b"\x1b[01;32mroot@vm\x1b[00m:\x1b[01;34m/etc\x1b[00m# "),
            "root@vm:/etc# "
        );
        // After a command: bracketed paste off, back to column 0.
        assert_eq!(clean_field(b"\r\x1b[K\x1b[?2004hvm$ "), "vm$ ");
        // Huawei's erase and a Junos carriage return before the prompt.
        assert_eq!(clean_field(b"\x1b[42D<HUAWEI>"), "<HUAWEI>");
        assert_eq!(clean_field(b"\radmin@mx1> "), "admin@mx1> ");
        assert_eq!(clean_field(b"Username: "), "Username: ");
        assert_eq!(clean_field(b"SW1#\r\n"), "SW1#");
        assert_eq!(clean_field(b""), "");
    }

    #[test]
    fn a_field_is_bounded_and_cannot_reorder_or_control_a_terminal() {
        let long = vec![b'x'; 1000];
        let field = clean_field(&long);
        assert_eq!(field.chars().count(), FIELD_MAX_CHARS + 1);
        assert!(field.ends_with('…'));
        let field = clean_field("a\u{202e}b\x1b[2J\x07\x1b]8;;http://x\x07c".as_bytes());
        assert_eq!(field, "a\u{fffd}bc");
        // A character cut at the end becomes U+FFFD, not a hidden tail.
        assert_eq!(clean_field(b"caf\xc3"), "caf\u{fffd}");
    }
}

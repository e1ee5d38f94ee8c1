//! Tests of configuration parsing, validation and presets.

use super::*;

#[test]
fn an_input_file_is_read_without_its_byte_order_mark() {
    let path = std::env::temp_dir().join(format!("finegrain-bom-{}.toml", std::process::id()));
    std::fs::write(&path, "\u{feff}seed = 3\n").unwrap();
    assert_eq!(read_input(&path).unwrap(), "seed = 3\n");
    std::fs::remove_file(&path).unwrap();
}

#[test]
fn shipped_presets_load() {
    for (name, _) in PRESETS {
        MachineConfig::load(name).unwrap();
    }
}

#[test]
fn rust_type_names_become_plain_words() {
    let m = plain_type_names(
        "a: invalid type: integer `5`, expected struct PdqParams; b: expected internally tagged enum Policy at line 1",
        "2^64-1",
    );
    assert_eq!(
        m,
        "a: invalid type: integer `5`, expected a group of named fields; b: expected a group of named fields with its \"kind\" at line 1"
    );
}

#[test]
fn unknown_preset_lists_the_allowed_ones() {
    let e = MachineConfig::load("nope").unwrap_err().to_string();
    assert!(e.starts_with("unknown preset 'nope': allowed hpca97, hpca99"), "{e}");
    assert!(!e.contains('\n'));
}

#[test]
fn malformed_toml_is_one_line_with_a_location() {
    let e = MachineConfig::from_toml("x.toml", "name = \"a\"\n[cache\n").unwrap_err().to_string();
    assert!(e.starts_with("malformed TOML in x.toml: line 2"), "{e}");
    assert!(!e.contains('\n'), "{e}");
}

#[test]
fn a_value_of_the_wrong_type_names_its_line_and_what_is_allowed() {
    let text = PRESETS[0].1.replace("mhz = 200", "mhz = 2.5e2");
    let e = MachineConfig::from_toml("x.toml", &text).unwrap_err().to_string();
    assert!(e.contains("(`mhz = 2.5e2`)") && e.contains("expected a whole number from 0 to 2^32-1"), "{e}");
    let text = PRESETS[0].1.split("[effects]").next().unwrap();
    let e = MachineConfig::from_toml("x.toml", text).unwrap_err().to_string();
    assert!(e.ends_with("x.toml: missing field `effects`"), "no misleading line: {e}");
}

#[test]
fn unknown_field_is_named() {
    let text = PRESETS[0].1.replace("[cache]", "[cache]\nsize_kb = 3");
    let e = MachineConfig::from_toml("x.toml", &text).unwrap_err().to_string();
    assert!(e.contains("size_kb"), "{e}");
}

#[test]
fn a_name_that_would_break_a_line_is_refused() {
    let mut m = MachineConfig::load("hpca97").unwrap();
    m.name = "x\ny".into();
    let e = m.validate().unwrap_err().to_string();
    assert_eq!(e, r#"invalid name = "x\ny": allowed a non-empty name without control characters"#);
}

#[test]
fn bad_line_size_names_field_and_allowed_values() {
    let mut m = MachineConfig::load("hpca97").unwrap();
    m.cache.line_bytes = 48;
    let e = m.validate().unwrap_err().to_string();
    assert_eq!(e, "invalid cache.line_bytes = 48: allowed a power of two from 8 to 4096");
}

#[test]
fn a_split_bus_address_phase_must_leave_every_data_transfer_a_data_phase() {
    let mut m = MachineConfig::load("hpca97").unwrap();
    let refused = "allowed 1..=3 (below every data-carrying occupancy; ni.uncached_read_occupancy is 4)";
    for bad in [0, 4, 9] {
        m.bus.address_phase_cycles = Some(bad);
        let e = m.validate().unwrap_err().to_string();
        assert_eq!(e, format!("invalid bus.address_phase_cycles = {bad}: {refused}"));
    }
    m.bus.address_phase_cycles = Some(1);
    m.validate().unwrap();
}

#[test]
fn a_read_cannot_be_over_before_the_bus_has_moved_its_data() {
    let mut m = MachineConfig::load("hpca97").unwrap();
    m.bus.memory_latency = 5;
    let e = m.validate().unwrap_err().to_string();
    assert_eq!(
        e,
        "invalid bus.memory_latency = 5: allowed at least bus.memory_occupancy (10): a read is over once the bus \
         has moved its data"
    );
}

#[test]
fn a_preset_names_the_fields_old_records_may_leave_out() {
    let text = PRESETS[0].1;
    for (line, says) in [
        ("address_phase_cycles = 2", "missing field `address_phase_cycles` in [bus]: a preset names it"),
        ("role_arbitration = \"round-robin\"", "missing field `role_arbitration` in [protocol]: a preset names it"),
    ] {
        assert!(text.contains(line), "{line}");
        let e = MachineConfig::from_toml("x.toml", &text.replace(line, "")).unwrap_err().to_string();
        assert!(e.contains(says) && e.contains("allowed"), "{e}");
    }
    // A [pdq] section names key affinity; a preset without one names
    // nothing of it.
    let pdq = PRESETS.iter().find(|(name, _)| *name == "hpca99").expect("hpca99 is shipped").1;
    let e = MachineConfig::from_toml("x.toml", &pdq.replace("affinity_passes = 0", "")).unwrap_err().to_string();
    assert!(e.contains("missing field `affinity_passes` in [pdq]: a preset names it"), "{e}");
    assert!(!text.contains("[pdq]") && MachineConfig::from_toml("x.toml", text).is_ok());
    // Any other field records may omit (read as 0 there) is demanded of a
    // preset too, by name, and so are the hardware device's costs.
    for line in ["local_event_cycles = 5", "hardware_dispatch_cycles = "] {
        let kept: Vec<&str> = pdq.lines().filter(|l| !l.starts_with(line)).collect();
        assert_eq!(kept.len() + 1, pdq.lines().count(), "{line}");
        let e = MachineConfig::from_toml("x.toml", &kept.join("\n")).unwrap_err().to_string();
        let field = line.split(' ').next().expect("a key");
        assert!(e.contains("missing field `") && e.contains(field), "{e}");
    }
}

#[test]
fn topology_rules() {
    let t = |n, p| Topology { nodes: n, procs_per_node: p };
    assert!(t(2, 1).validate(&Policy::Single).is_ok());
    assert!(t(2, 0).validate(&Policy::Floating).unwrap_err().to_string().contains("procs_per_node = 0"));
    let e = t(2, 2).validate(&Policy::Single).unwrap_err().to_string();
    assert!(e.starts_with("invalid procs_per_node = 2: policy single runs exactly 1 processor per node"), "{e}");
    let e = t(2, 2).validate(&Policy::Fixed { protocol_procs: 2 }).unwrap_err().to_string();
    assert!(e.contains("leaves no compute processor"), "{e}");
    assert!(t(2, 3).validate(&Policy::Fixed { protocol_procs: 2 }).is_ok());
    let e = t(0, 3).validate(&Policy::Floating).unwrap_err().to_string();
    assert_eq!(e, format!("invalid nodes = 0: allowed 1..={MAX_NODES}"));
}

#[test]
fn policy_spellings() {
    assert_eq!(Policy::parse("fixed").unwrap(), Policy::Fixed { protocol_procs: 1 });
    // Names are lower case, like every other name.
    let e = Policy::parse("Fixed").unwrap_err().to_string();
    assert_eq!(
        e,
        "invalid policy = Fixed: allowed single, fixed, fixed:K (K >= 1), floating, coprocessor:main-am, \
         coprocessor:coproc-am, coprocessor:optimized"
    );
    assert_eq!(Policy::parse("fixed:3").unwrap(), Policy::Fixed { protocol_procs: 3 });
    assert_eq!(Policy::parse("floating").unwrap(), Policy::Floating);
    let e = Policy::parse("round-robin").unwrap_err().to_string();
    assert!(e.contains("allowed single, fixed, fixed:K"), "{e}");
    assert_eq!(Policy::Fixed { protocol_procs: 2 }.label(), "fixed:2");
    assert_eq!(Policy::Fixed { protocol_procs: 2 }.compute_procs(5), 3);
    // The co-processor's three libraries, each by its label.
    for library in CoprocLibrary::ALL {
        let p = Policy::Coprocessor { library };
        assert_eq!(Policy::parse(&p.label()).unwrap(), p);
        assert_eq!(p.compute_procs(1), 1, "the co-processor is besides the node's processors");
    }
    let e = Policy::parse("coprocessor:fast").unwrap_err().to_string();
    assert!(e.starts_with("invalid policy = coprocessor:fast: allowed") && e.contains("coprocessor:optimized"), "{e}");
    let e = Topology { nodes: 16, procs_per_node: 2 }
        .validate(&Policy::Coprocessor { library: CoprocLibrary::Optimized })
        .unwrap_err()
        .to_string();
    assert!(e.contains("one main processor per node"), "{e}");
}

#[test]
fn the_ipps96_preset_has_a_coprocessor_and_the_others_none() {
    let m = MachineConfig::load("ipps96").unwrap();
    let c = m.coprocessor.as_ref().unwrap();
    assert_eq!((m.processor.mhz, c.mips, c.icache_words), (40, 3, 8), "the paper's Section 4 and 5.1 figures");
    assert_eq!(m.dma_calibration.as_ref().unwrap().flag_one_way_us, 9.5);
    for name in ["hpca97", "hpca99"] {
        let m = MachineConfig::load(name).unwrap();
        assert!(m.coprocessor.is_none() && m.dma_calibration.is_none());
        // Records of machines without one hold no trace of the section.
        let json = toml::to_string(&m).unwrap();
        assert!(!json.contains("coprocessor") && !json.contains("dma_calibration"), "{name}");
    }
}

#[test]
fn a_coprocessor_section_with_a_zero_rate_is_refused_in_one_line() {
    let text = include_str!("../../../../presets/ipps96.toml").replace("mips = 3", "mips = 0");
    let e = MachineConfig::from_toml("test", &text).unwrap_err().to_string();
    assert_eq!(e, "invalid coprocessor.mips = 0: allowed 1..=1000000");
    let text = include_str!("../../../../presets/ipps96.toml").replace("tolerance = 0.10", "tolerance = 2.0");
    let e = MachineConfig::from_toml("test", &text).unwrap_err().to_string();
    assert!(e.starts_with("invalid dma_calibration.tolerance = 2"), "{e}");
}

#[test]
fn a_memory_section_sizes_the_global_segment_and_its_absence_leaves_no_trace() {
    // The preset ends with its ledger, so a parameter appended here needs its line there too.
    let base = format!(
        "{}\n\"memory.global_segment_bytes\" = {{ kind = \"estimate\", source = \"this test\", moves = \"nothing\" }}\n",
        include_str!("../../../../presets/hpca97.toml")
    );
    for name in ["hpca97", "hpca99", "ipps96"] {
        let m = MachineConfig::load(name).unwrap();
        assert_eq!(m.global_segment_bytes(), 64 << 20, "{name}: the default");
        // Records of machines that leave it out serialize as before it existed.
        assert!(!toml::to_string(&m).unwrap().contains("global_segment"), "{name}");
    }
    let m = MachineConfig::from_toml("test", &format!("{base}\n[memory]\nglobal_segment_bytes = 4096\n")).unwrap();
    assert_eq!(m.global_segment_bytes(), 4096);
    assert!(toml::to_string(&m).unwrap().contains("global_segment_bytes = 4096"));
    let e = MachineConfig::from_toml("test", &format!("{base}\n[memory]\nglobal_segment_bytes = 100\n"))
        .unwrap_err()
        .to_string();
    assert_eq!(
        e,
        "invalid memory.global_segment_bytes = 100: allowed a positive multiple of cache.line_bytes up to 1 GiB"
    );
    let e =
        MachineConfig::from_toml("test", &format!("{base}\n[memory]\nglobal_bytes = 4096\n")).unwrap_err().to_string();
    assert!(e.contains("global_bytes") && !e.contains('\n'), "{e}");
}

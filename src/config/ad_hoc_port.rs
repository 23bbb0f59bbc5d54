//! A port that is not in the config, resolved against it: an ad-hoc
//! connect, or a configured port switched to another preset.

use super::checks::check_name;
use super::load::Config;
use super::presets::DEFAULT_PRESET;
use super::resolve::PortConfig;

impl Config {
    /// A [`PortConfig`] for a port that is not in the config (an ad-hoc
    /// connect) or a configured port switched to another preset: `preset`
    /// (default `generic`) applied to `device`. The error says what is wrong
    /// and lists the presets.
    pub fn resolve_port(
        &self,
        name: &str,
        device: &str,
        preset: Option<&str>,
    ) -> Result<PortConfig, String> {
        check_name(name).map_err(|e| format!("bad port name {name:?}: {e}"))?;
        if device.is_empty() {
            return Err("the device path is empty; give one like /dev/ttyUSB0".into());
        }
        let preset = preset.unwrap_or(DEFAULT_PRESET);
        let p = self.presets.get(preset).ok_or_else(|| {
            let known = self.preset_names();
            let meant = super::first_mistakes::did_you_mean(preset, &known)
                .map(|k| format!(" (did you mean {k:?}?)"))
                .unwrap_or_default();
            format!(
                "unknown preset {preset:?}{meant}; presets: {}",
                known.join(", ")
            )
        })?;
        PortConfig::from_preset(name, device, p.clone(), self.server.down_after)
    }

    /// The names of all presets, built-in and the user's, in order.
    fn preset_names(&self) -> Vec<&str> {
        self.presets.keys().map(String::as_str).collect()
    }
}

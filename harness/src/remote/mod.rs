//! faultline's hands on other machines: hosts reached over SSH ([`ssh`]), each running `faultline agent`
//! ([`agent`], spoken to through [`client`]), named in a hosts file ([`hosts`]).
//!
//! `faultline hosts check` uses them end to end today: it connects to every host, installs this build, starts the
//! agent, and reports what each host can do and how its clock relates to the control's.

pub mod agent;
pub mod client;
pub mod hands;
pub mod hosts;
pub mod lab;
pub mod protocol;
pub mod session;
pub mod ssh;
pub mod workbench;

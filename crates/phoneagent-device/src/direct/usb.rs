//! adbd over USB bulk endpoints (feature `usb`, pure Rust through `nusb`: no libusb, no
//! system packages). An Android phone with USB debugging on exposes an interface of class
//! 0xff, subclass 0x42, protocol 0x01 with one bulk-in and one bulk-out endpoint; ADB messages
//! travel on them as a 24-byte header transfer followed by a payload transfer (a zero-length
//! packet ends a payload that fills whole packets, as adb's own USB code does).
//!
//! Not testable on a machine without a USB bus; the message layer above it is the one tested
//! over TCP against the virtual phone.

use super::message::Message;
use nusb::descriptors::TransferType;
use nusb::io::{EndpointRead, EndpointWrite};
use nusb::transfer::{Bulk, Direction, In, Out};
use std::io;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const ADB_CLASS: u8 = 0xff;
const ADB_SUBCLASS: u8 = 0x42;
const ADB_PROTOCOL: u8 = 0x01;
const TRANSFER_SIZE: usize = 64 * 1024;

/// One phone with an ADB interface on the USB bus.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UsbCandidate {
    /// USB serial number (what adb uses as the serial); `bus-port` path when the phone has none.
    pub serial: String,
    /// Vendor and product ids, `vvvv:pppp`.
    pub ids: String,
    /// Product string, when the phone gives one.
    pub product: Option<String>,
}

/// Phones with an ADB interface.
///
/// # Errors
/// I/O errors of the USB enumeration (a machine without a USB bus lists nothing, not an error).
pub(crate) async fn list() -> io::Result<Vec<UsbCandidate>> {
    let devices = match nusb::list_devices().await {
        Ok(d) => d,
        Err(e) => {
            tracing::debug!("USB enumeration failed: {e}");
            return Ok(Vec::new());
        }
    };
    Ok(devices
        .filter(|d| {
            d.interfaces().any(|i| {
                i.class() == ADB_CLASS
                    && i.subclass() == ADB_SUBCLASS
                    && i.protocol() == ADB_PROTOCOL
            })
        })
        .map(|d| UsbCandidate {
            serial: d
                .serial_number()
                .map(str::to_string)
                .unwrap_or_else(|| format!("usb:{}-{}", d.busnum(), d.device_address())),
            ids: format!("{:04x}:{:04x}", d.vendor_id(), d.product_id()),
            product: d.product_string().map(str::to_string),
        })
        .collect())
}

/// The bulk endpoints of one claimed ADB interface.
pub(crate) struct UsbIo {
    reader: EndpointRead<Bulk>,
    writer: EndpointWrite<Bulk>,
}

impl UsbIo {
    /// Open and claim the ADB interface of the phone whose serial is `serial`.
    ///
    /// # Errors
    /// `NotFound` when no such phone is attached; the OS error when the interface cannot be
    /// claimed (typically `Busy`: an adb server holds it, or a permission error: udev rules).
    pub(crate) async fn open(serial: &str) -> io::Result<Self> {
        let devices = nusb::list_devices().await.map_err(io::Error::from)?;
        for d in devices {
            let this = d
                .serial_number()
                .map(str::to_string)
                .unwrap_or_else(|| format!("usb:{}-{}", d.busnum(), d.device_address()));
            if this != serial {
                continue;
            }
            let Some(intf) = d.interfaces().find(|i| {
                i.class() == ADB_CLASS
                    && i.subclass() == ADB_SUBCLASS
                    && i.protocol() == ADB_PROTOCOL
            }) else {
                continue;
            };
            let number = intf.interface_number();
            let dev = d.open().await.map_err(io::Error::from)?;
            let iface = dev
                .detach_and_claim_interface(number)
                .await
                .map_err(|e| {
                    let kind = io::Error::from(e.clone()).kind();
                    io::Error::new(
                        kind,
                        format!(
                            "cannot claim the ADB interface of USB device {serial}: {e} (an adb server may be holding it: run `adb kill-server`; on Linux, check the udev rules give you access to the phone)"
                        ),
                    )
                })?;
            let mut ep_in = None;
            let mut ep_out = None;
            if let Some(desc) = iface.descriptor() {
                for ep in desc.endpoints() {
                    if ep.transfer_type() != TransferType::Bulk {
                        continue;
                    }
                    match ep.direction() {
                        Direction::In => ep_in = Some(ep.address()),
                        Direction::Out => ep_out = Some(ep.address()),
                    }
                }
            }
            let (Some(a_in), Some(a_out)) = (ep_in, ep_out) else {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    format!("the ADB interface of USB device {serial} has no bulk endpoint pair"),
                ));
            };
            let reader = iface
                .endpoint::<Bulk, In>(a_in)
                .map_err(io::Error::from)?
                .reader(TRANSFER_SIZE);
            let writer = iface
                .endpoint::<Bulk, Out>(a_out)
                .map_err(io::Error::from)?
                .writer(TRANSFER_SIZE);
            return Ok(Self { reader, writer });
        }
        Err(io::Error::new(
            io::ErrorKind::NotFound,
            format!("no phone with USB serial {serial} and USB debugging on is attached"),
        ))
    }

    /// Send a message: header transfer, then payload transfer ended by a short/zero-length
    /// packet.
    pub(crate) async fn send(&mut self, m: &Message) -> io::Result<()> {
        self.writer.write_all(&m.header()).await?;
        self.writer.flush_end_async().await?;
        if !m.data.is_empty() {
            self.writer.write_all(&m.data).await?;
            self.writer.flush_end_async().await?;
        }
        Ok(())
    }

    /// Receive a message.
    pub(crate) async fn recv(&mut self, max: u32) -> io::Result<Message> {
        let mut h = [0u8; 24];
        self.reader.read_exact(&mut h).await?;
        let (command, arg0, arg1, len, check) = Message::parse_header(&h, max)?;
        let mut data = vec![0u8; len as usize];
        self.reader.read_exact(&mut data).await?;
        let m = Message {
            command,
            arg0,
            arg1,
            data,
        };
        m.verify(check)?;
        Ok(m)
    }
}

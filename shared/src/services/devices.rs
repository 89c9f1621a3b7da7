//! Devices registered for push: register (an idempotent upsert under the per-user limit),
//! unregister, list. A push is sent to the devices registered when the event is delivered
//! (see `services::push`).

use crate::clock;
use crate::domain::UserId;
use crate::domain::device::{DeviceId, MAX_DEVICES, Registration};
use crate::error::Error;
use crate::services::App;
use crate::store::devices::Registered;
use crate::store::schema::DeviceItem;

/// Tries when a concurrent registration or removal of the same device raced ours.
const RACE_ATTEMPTS: u32 = 3;

/// Registers device `id` of `user` (or replaces its platform and token); `true` when it is
/// new. Refused with [`Error::DeviceLimitReached`] beyond [`MAX_DEVICES`] and with
/// [`Error::AccountClosed`] on a closed account; nothing is written then.
pub async fn register(
    app: &App,
    user: &UserId,
    id: &DeviceId,
    reg: &Registration,
) -> Result<bool, Error> {
    for _ in 0..RACE_ATTEMPTS {
        let now = clock::format(clock::now());
        match app
            .store
            .register_device(user, id, reg, MAX_DEVICES, &now)
            .await?
        {
            Registered::Added => {
                tracing::info!(user_id = %user, device = %id, platform = reg.platform.as_str(), "device_registered");
                return Ok(true);
            }
            Registered::Updated => return Ok(false),
            Registered::LimitReached => {
                return Err(Error::DeviceLimitReached { limit: MAX_DEVICES });
            }
            Registered::AccountClosed => return Err(Error::AccountClosed),
            Registered::Raced => continue,
        }
    }
    Err(Error::Contention {
        attempts: RACE_ATTEMPTS,
    })
}

/// Unregisters device `id` of `user`; `false` when it was not registered.
pub async fn unregister(app: &App, user: &UserId, id: &DeviceId) -> Result<bool, Error> {
    let removed = app.store.delete_device(user, id, None).await?;
    if removed {
        tracing::info!(user_id = %user, device = %id, "device_unregistered");
    }
    Ok(removed)
}

/// The devices of `user`.
pub async fn list(app: &App, user: &UserId) -> Result<Vec<(DeviceId, DeviceItem)>, Error> {
    app.store.devices(user).await
}

/// Removes every device of `user` (account deletion); how many there were.
pub async fn remove_all(app: &App, user: &UserId) -> Result<usize, Error> {
    let mut removed = 0;
    for (id, _) in app.store.devices(user).await? {
        if app.store.delete_device(user, &id, None).await? {
            removed += 1;
        }
    }
    Ok(removed)
}

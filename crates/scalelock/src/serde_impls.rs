//! The `serde` feature: [`Mutex`], [`RwLock`] and [`BiasedRwLock`] serialize as the value they
//! hold (taking the lock for the time it takes) and deserialize into an unlocked lock, as
//! parking_lot's do. [`ReentrantMutex`](crate::ReentrantMutex) and
//! [`FairMutex`](crate::FairMutex) get the same from lock_api's `serde` feature.

use crate::mutex_wrapper::Mutex;
use crate::rwlock_wrapper::{BiasedRwLock, RwLock};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

#[cfg_attr(docsrs, doc(cfg(feature = "serde")))]
impl<T: Serialize + ?Sized> Serialize for Mutex<T> {
    /// Serializes the value, holding the lock meanwhile.
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.lock().serialize(serializer)
    }
}

#[cfg_attr(docsrs, doc(cfg(feature = "serde")))]
impl<'de, T: Deserialize<'de>> Deserialize<'de> for Mutex<T> {
    /// An unlocked mutex holding the deserialized value.
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        T::deserialize(deserializer).map(Mutex::new)
    }
}

/// Serialize (under a read lock) and Deserialize for one rwlock wrapper.
macro_rules! rwlock_serde {
    ($name:ident) => {
        #[cfg_attr(docsrs, doc(cfg(feature = "serde")))]
        impl<T: Serialize + ?Sized> Serialize for $name<T> {
            /// Serializes the value, holding a read lock meanwhile.
            fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                self.read().serialize(serializer)
            }
        }

        #[cfg_attr(docsrs, doc(cfg(feature = "serde")))]
        impl<'de, T: Deserialize<'de>> Deserialize<'de> for $name<T> {
            /// An unlocked rwlock holding the deserialized value.
            fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                T::deserialize(deserializer).map($name::new)
            }
        }
    };
}

rwlock_serde!(RwLock);
rwlock_serde!(BiasedRwLock);

//! `libscalelock_preload.so`: pthread interposition (see the preload issue).

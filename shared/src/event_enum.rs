//! [`event_enum!`]: the payloads one handler or projection takes, as one enum.
//!
//! A consumer used to match on `event.event_type.as_str()` and decode each arm by hand, so
//! what it took was spread over string arms and its consumer list. Declaring the enum once
//! gives both: `decode` turns a stored event into the matching variant (or `None` for a type
//! it does not take), and `TYPES` is the list its consumers subscribe to and `ghost events`
//! prints, so the table of who consumes what is read from the code.

/// Declares `enum Name { A(A), B(B), .. }` over event payload types in scope, with
/// `Name::TYPES` (their type names, in order) and `Name::decode(&RecordedEvent)`.
///
/// ```ignore
/// ghost_shared::event_enum! {
///     /// What the router takes.
///     pub enum RouterInput { UserMessageReceived, ClassifierReplied }
/// }
/// match RouterInput::decode(&event)? {
///     Some(RouterInput::UserMessageReceived(m)) => ..,
///     Some(RouterInput::ClassifierReplied(r)) => ..,
///     None => .., // another type
/// }
/// ```
#[macro_export]
macro_rules! event_enum {
    ($(#[$meta:meta])* $vis:vis enum $name:ident { $($variant:ident),+ $(,)? }) => {
        $(#[$meta])*
        #[derive(Debug, Clone)]
        #[allow(clippy::large_enum_variant)]
        $vis enum $name {
            $(
                #[allow(missing_docs)]
                $variant($variant),
            )+
        }

        #[allow(dead_code)]
        impl $name {
            /// The event type names this enum takes, in declaration order.
            pub const TYPES: &'static [&'static str] =
                &[$(<$variant as $crate::envelope::EventPayload>::EVENT_TYPE),+];

            /// `event` as one of the variants; `Ok(None)` when its type is not one of them,
            /// an error when it is but its payload does not decode.
            pub fn decode(
                event: &$crate::envelope::RecordedEvent,
            ) -> ::std::result::Result<::std::option::Option<Self>, $crate::envelope::DecodeError> {
                $(
                    if event.event_type == <$variant as $crate::envelope::EventPayload>::EVENT_TYPE {
                        return event.decode::<$variant>().map(|p| Some(Self::$variant(p)));
                    }
                )+
                Ok(None)
            }

            /// Whether events of `event_type` are among [`Self::TYPES`].
            pub fn takes(event_type: &str) -> bool {
                Self::TYPES.contains(&event_type)
            }
        }
    };
}

/// `&[A::EVENT_TYPE, B::EVENT_TYPE, ..]` for payload types `A`, `B`, ..: a service
/// descriptor's `consumes` and `appends`, written with the types, so a renamed or removed
/// type is a compile error, not a stale string.
#[macro_export]
macro_rules! event_types {
    ($($t:path),* $(,)?) => {
        &[$(<$t as $crate::envelope::EventPayload>::EVENT_TYPE),*]
    };
}

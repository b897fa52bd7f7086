//! Flow control: when may each message be delivered (DESIGN §1). Under construction.

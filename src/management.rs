//! Management: the platform's database record and its password reset (DESIGN §3).
//! Under construction.

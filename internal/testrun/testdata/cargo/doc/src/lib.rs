/// Adds two numbers.
///
/// ```
/// let x = calc::add(1, 2);
///
/// assert_eq!(x, 3);
/// assert!(x == 4, "x is {}", x);
/// ```
pub fn add(a: i32, b: i32) -> i32 {
    a + b
}

/// With its own main.
///
/// ```
/// fn main() {
///     let x = calc::add(1, 2);
///     assert_eq!(x, 5);
/// }
/// ```
pub fn other() {}

/// With a hidden line.
///
/// ```
/// # let z = 1;
/// # let w = 2;
/// assert_eq!(z + w, 7);
/// ```
pub fn hidden() {}

/// Panics in the library.
///
/// ```
/// calc::boom();
/// ```
pub fn boom() {
    panic!("boom in lib");
}

/// Does not compile.
///
/// ```
/// let y: i32 = "x";
/// ```
pub fn nothing() {}
